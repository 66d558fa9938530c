package dev.lease.agent;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Objects (connections) marked with a string, by identity and weakly: a connection whose class
 * overrides {@code equals} (a pool proxy) or is never closed does not confuse or leak it. Small: it
 * holds only the connections that configured scopes returned.
 */
final class IdentityMarks {

  private static final class Entry extends WeakReference<Object> {
    final String mark;

    Entry(Object referent, String mark) {
      super(referent);
      this.mark = mark;
    }
  }

  private final Map<Integer, List<Entry>> buckets = new HashMap<>();
  private volatile int size;
  private int puts;

  boolean isEmpty() {
    return size == 0;
  }

  synchronized void put(Object o, String mark) {
    if (++puts % 256 == 0) {
      sweep();
    }
    List<Entry> bucket =
        buckets.computeIfAbsent(System.identityHashCode(o), k -> new ArrayList<>(1));
    bucket.removeIf(e -> e.get() == null || e.get() == o);
    bucket.add(new Entry(o, mark));
    size = count();
  }

  synchronized String get(Object o) {
    List<Entry> bucket = buckets.get(System.identityHashCode(o));
    if (bucket != null) {
      for (Entry e : bucket) {
        if (e.get() == o) {
          return e.mark;
        }
      }
    }
    return null;
  }

  synchronized void remove(Object o) {
    List<Entry> bucket = buckets.get(System.identityHashCode(o));
    if (bucket != null) {
      bucket.removeIf(e -> e.get() == null || e.get() == o);
      if (bucket.isEmpty()) {
        buckets.remove(System.identityHashCode(o));
      }
    }
    size = count();
  }

  private void sweep() {
    for (Iterator<List<Entry>> it = buckets.values().iterator(); it.hasNext(); ) {
      List<Entry> bucket = it.next();
      bucket.removeIf(e -> e.get() == null);
      if (bucket.isEmpty()) {
        it.remove();
      }
    }
  }

  private int count() {
    int n = 0;
    for (List<Entry> b : buckets.values()) {
      n += b.size();
    }
    return n;
  }
}
