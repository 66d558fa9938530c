#!/usr/bin/env python3
"""Makes docs/benchmarks.md's lease-jdbc benchmark table from PiggybackBenchmark's JMH CSV.

Each row: a trial (database, commits, statements, threads); each variant's figure is its
transactions per second from its mean transaction time (threads / mean time; the variants are
interleaved transaction by transaction), and its ratio to raw of the same trial.

    python3 lease-benchmarks/tools/piggyback-table.py lease-benchmarks/target/piggyback.csv
"""
import csv
import sys

trials = {}
for r in csv.DictReader(open(sys.argv[1])):
    name = r["Benchmark"]
    if ":" not in name:
        continue
    method, counter = name.rsplit(".", 1)[1].split(":")
    threads = 1 if method == "oneThread" else 8
    database = r["Param: database"]
    if r.get("Param: multiQueries") == "true" and database in ("mysql", "mariadb"):
        database += ", allowMultiQueries"
    key = (database, r["Param: durability"], int(r["Param: statements"]), threads)
    trials.setdefault(key, {})[counter] = float(r["Score"])

print("| database | commits | statements | threads | raw tx/s | STRICT, separate verify"
      " | STRICT, verify carried along | VERIFY, carried along"
      " | STRICT carried, previous mechanism (before issue 25) |")
print("|---|---|---|---|---|---|---|---|---|")
order = {"postgresql": 0, "mariadb": 1, "mariadb, allowMultiQueries": 2, "mysql": 3,
         "mysql, allowMultiQueries": 4, "sqlite": 5}
for key in sorted(trials, key=lambda k: (order.get(k[0], 9), k[1] != "relaxed", k[3], k[2])):
    t = trials[key]
    threads = key[3]

    def tps(v):
        return threads * 1e9 * t[v + "Tx"] / t[v + "Nanos"]

    raw = tps("raw")
    cells = [
        "{:,.0f} ({:.2f}×)".format(tps(v), tps(v) / raw)
        for v in ("separate", "carried", "verify", "previous")
        if v + "Tx" in t
    ]
    cells += ["–"] * (4 - len(cells))
    # MariaDB has no per-session durability setting: both of its runs use the server's
    # (mysql: MySQL Connector/J against the same MariaDB server)
    commits = key[1] if key[0] == "postgresql" else "server's (run {})".format(
        1 if key[1] == "relaxed" else 2)
    print("| {} | {} | {} | {} | {:,.0f} | {} | {} | {} | {} |".format(
        key[0], commits, key[2], threads, raw, *cells))
