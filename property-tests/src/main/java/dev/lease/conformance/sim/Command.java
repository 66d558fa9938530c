package dev.lease.conformance.sim;

/** One step of a model-based test: what process {@code process} does, or what happens to it. */
public record Command(Kind kind, int process, int amount) {

  public enum Kind {
    CLAIM,
    RENEW,
    RELEASE,
    VERIFY,
    TRANSACTION,
    /**
     * True time (the database clock and every process clock, at its rate) moves {@code amount} ms.
     */
    ADVANCE,
    /** The process's monotonic clock steps forward {@code amount} ms (skew). */
    SKEW,
    /** The process's clock rate becomes 1 + {@code amount}/1000 (drift within the bound). */
    DRIFT,
    /** The process's next request never reaches the database. */
    DROP,
    /** The database clock steps by {@code amount} ms, forward or back. */
    DATABASE_CLOCK_STEP,
    PAUSE,
    RESUME,
    /** The process hands its lease to process {@code amount} mod the process count (issue 23). */
    TRANSFER
  }

  @Override
  public String toString() {
    return switch (kind) {
      case ADVANCE -> "advance " + amount + " ms";
      case SKEW -> "p" + process + " clock +" + amount + " ms";
      case DRIFT -> "p" + process + " clock rate " + (1000 + amount) + "/1000";
      case DATABASE_CLOCK_STEP -> "database clock " + (amount >= 0 ? "+" : "") + amount + " ms";
      case TRANSFER -> "p" + process + " transfer to p" + amount;
      default -> "p" + process + " " + kind.name().toLowerCase(java.util.Locale.ROOT);
    };
  }
}
