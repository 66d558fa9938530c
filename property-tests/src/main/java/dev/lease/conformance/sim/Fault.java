package dev.lease.conformance.sim;

/**
 * One fault of a simulated schedule, injected at {@code atMs} of true time into process {@code
 * process} (modulo the number of processes).
 */
public record Fault(int atMs, Kind kind, int process, int amount) {

  public enum Kind {
    /** The process stops (GC, SIGSTOP) for {@code amount} ms; its timers then run late. */
    PAUSE,
    /** The process's next {@code amount % 4 + 1} requests never reach the database. */
    DROP,
    /** The process's next two requests reach the database {@code amount} ms late. */
    DELAY,
    /**
     * The process's next two replies come back {@code amount} ms late (the statement did apply).
     */
    SLOW_REPLY,
    /** The database answers nobody for {@code amount} ms. */
    STALL,
    /**
     * The process's clock rate changes to 1 + {@code amount}/1000, clamped to the allowed range.
     */
    DRIFT,
    /**
     * The process's clock steps by {@code amount} ms (a monotonic clock ignores backward steps).
     */
    JUMP,
    /** The process dies without releasing. */
    CRASH,
    /** The process's next business transaction loses its connection after its first row. */
    FAIL_MIDWAY,
    /** A participant writes to the lease table behind the protocol's back (negative controls). */
    INTRUDE
  }

  @Override
  public String toString() {
    return "at " + atMs + " ms " + kind + " p" + process + " " + amount;
  }
}
