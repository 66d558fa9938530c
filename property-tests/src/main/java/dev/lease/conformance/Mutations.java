package dev.lease.conformance;

import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The mutations in force for one run, and how often they changed what reached the driver. A control
 * whose mutations never applied has broken nothing, which its note shows.
 */
public final class Mutations {

  private final Set<Mutation> active;
  private final AtomicLong hits = new AtomicLong();

  private Mutations(Set<Mutation> active) {
    this.active = active.isEmpty() ? EnumSet.noneOf(Mutation.class) : EnumSet.copyOf(active);
  }

  /** A fresh set of counters for {@code active} (one per run). */
  public static Mutations of(Set<Mutation> active) {
    return new Mutations(active);
  }

  public static Mutations none() {
    return new Mutations(Set.of());
  }

  public boolean isEmpty() {
    return active.isEmpty();
  }

  public boolean has(Mutation m) {
    return active.contains(m);
  }

  /** The SQL the broken version sends instead of {@code sql}. */
  public String sql(String sql) {
    if (active.isEmpty()) {
      return sql;
    }
    String out = sql;
    for (Mutation m : active) {
      out = m.rewrite(out);
    }
    if (!out.equals(sql)) {
      hits.incrementAndGet();
    }
    return out;
  }

  /** True (and counted) when a rollback is to be lost. */
  public boolean losesRollback() {
    return hit(Mutation.ROLLBACK_LOST);
  }

  /** True (and counted) when {@code setAutoCommit(false)} is to be dropped. */
  public boolean dropsAutoCommitOff() {
    return hit(Mutation.AUTOCOMMIT_STAYS_ON);
  }

  private boolean hit(Mutation m) {
    if (active.contains(m)) {
      hits.incrementAndGet();
      return true;
    }
    return false;
  }

  /** Statements and calls the mutations changed so far. */
  public long hits() {
    return hits.get();
  }

  @Override
  public String toString() {
    return active.toString();
  }
}
