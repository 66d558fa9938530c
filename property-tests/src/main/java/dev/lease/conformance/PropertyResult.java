package dev.lease.conformance;

import java.util.List;
import java.util.Objects;

/**
 * What checking one property (or one negative control) on one database found.
 *
 * @param property the property's id
 * @param database the database it ran on (postgresql, mysql, mariadb, sqlite, or "sqlite (virtual
 *     time)" for the simulations)
 * @param schedules schedules (generated command sequences, fault runs, rounds) tried
 * @param faults faults injected over all schedules
 * @param counts the events the run counted: each with how often it was observed and how often it
 *     must be for the run to count as a test (see {@link ConformanceProperty})
 * @param violations violations found
 * @param failure the seed, the shrunk schedule and what broke, or null when nothing broke
 * @param note what the run could not do on this database, or other context, or null
 * @param millis how long the check took, measured by the property
 */
public record PropertyResult(
    String property,
    String database,
    long schedules,
    long faults,
    List<Count> counts,
    long violations,
    String failure,
    String note,
    long millis) {

  /** The three answers a check can give. */
  public enum Verdict {
    /**
     * No violation, at least one event was required, and every required event was observed as often
     * as required.
     */
    HOLDS,
    /** A violation was found. */
    FAILS,
    /**
     * No violation, but the run did not observe the events the property is about often enough, or
     * named none it requires: it did not test what it names. Never reported as holding.
     */
    INCONCLUSIVE
  }

  /**
   * An event a run counted. {@code required} is how many the run must observe to count as a test; 0
   * for counts shown for information only.
   */
  public record Count(String event, long observed, long required) {
    public Count {
      Objects.requireNonNull(event, "event");
      if (event.isBlank() || event.contains(";") || event.contains("=")) {
        throw new IllegalArgumentException(
            "an event name must be a phrase without ; or =: " + event);
      }
    }

    /** A count shown for information, with nothing required. */
    public static Count info(String event, long observed) {
      return new Count(event, observed, 0);
    }

    public boolean enough() {
      return observed >= required;
    }

    @Override
    public String toString() {
      return event + " " + observed + (required > 0 ? " (needs " + required + ")" : "");
    }
  }

  public PropertyResult {
    counts = List.copyOf(counts);
  }

  public Verdict verdict() {
    if (violations > 0 || failure != null) {
      return Verdict.FAILS;
    }
    boolean requiresSomething = counts.stream().anyMatch(c -> c.required() > 0);
    return requiresSomething && counts.stream().allMatch(Count::enough)
        ? Verdict.HOLDS
        : Verdict.INCONCLUSIVE;
  }

  public boolean holds() {
    return verdict() == Verdict.HOLDS;
  }

  /** The required events observed too rarely; empty unless the verdict is inconclusive. */
  public List<Count> missing() {
    return counts.stream().filter(c -> !c.enough()).toList();
  }

  /** How often {@code event} was observed; 0 if this result has no such count. */
  public long observed(String event) {
    return counts.stream()
        .filter(c -> c.event().equals(event))
        .mapToLong(Count::observed)
        .findFirst()
        .orElse(0);
  }
}
