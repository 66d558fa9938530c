package dev.lease.conformance.sim;

/**
 * One fault of a simulated schedule, injected at {@code atMs} of true time into process {@code
 * process} (modulo the number of processes).
 */
public record Fault(int atMs, Kind kind, int process, int amount) {

  public enum Kind {
    /**
     * The process stops (GC, SIGSTOP) for {@code amount} ms, inside a transaction or between: its
     * timers, keeper included, then run late.
     */
    PAUSE,
    /** The process's next {@code amount % 4 + 1} requests never reach the database. */
    DROP,
    /**
     * The process's next two statements reach the database {@code amount} ms late (or time out); a
     * loss meanwhile cancels a business statement.
     */
    DELAY,
    /**
     * The process's next two replies come back {@code amount} ms late (the statement did apply).
     */
    SLOW_REPLY,
    /** The database answers nobody for {@code amount} ms: every statement waits (or times out). */
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
    /**
     * The process's next business transaction fails after its first row (an application error): the
     * application closes the connection without rolling back.
     */
    FAIL_MIDWAY,
    /** The database server's clock steps by {@code amount} ms, forward or back (NTP). */
    DATABASE_CLOCK_STEP
  }

  @Override
  public String toString() {
    return "at " + atMs + " ms " + kind + " p" + process + " " + amount;
  }
}
