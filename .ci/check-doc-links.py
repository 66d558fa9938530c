#!/usr/bin/env python3
"""Checks that every relative link in README.md and docs/*.md names an existing file and anchor.

Run from the repository root: python3 .ci/check-doc-links.py (exit 1 on a broken link)."""
import re, os, sys, glob
def slug(h):
    t = h.strip().lstrip('#').strip().lower()
    t = re.sub(r'[^\w\- ]', '', t)
    return t.replace(' ', '-')
def anchors(path):
    out=set(); f=False; seen={}
    for l in open(path):
        if l.startswith('```'): f = not f
        if not f and re.match(r'^#{1,6} ', l):
            s = slug(l); n = seen.get(s, 0); seen[s] = n+1
            out.add(s if n == 0 else f'{s}-{n}')
    return out
bad = 0
for page in ['README.md'] + sorted(glob.glob('docs/*.md')):
    f=False
    for i, l in enumerate(open(page), 1):
        if l.startswith('```'): f = not f
        if f: continue
        for m in re.finditer(r'\]\(([^)\s]+)\)', l):
            target = m.group(1)
            if re.match(r'^[a-z]+:', target): continue
            path, _, anchor = target.partition('#')
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(full):
                print(f'{page}:{i}: missing file {target}'); bad += 1; continue
            if anchor and full.endswith('.md') and anchor not in anchors(full):
                print(f'{page}:{i}: missing anchor {target}'); bad += 1
print('bad links:', bad); sys.exit(1 if bad else 0)
