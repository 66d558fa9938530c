package dev.lease.conformance;

import java.util.List;

/**
 * One guarantee of docs/conformance.md's "Guarantees" section, checkable against a database.
 * Implementations live in this module's main sources, so the conformance runner jar carries them
 * and the module's tests run the very same code against the four CI databases. To add a property,
 * implement this interface and list it in {@link Properties#all()}; the runner, its table, {@code
 * --only} and {@code --controls} pick it up from there.
 *
 * <h2>The counting contract: a run that saw nothing is not a pass</h2>
 *
 * A property is about a dangerous case (a takeover while a stale transaction is open, a claim that
 * had to wait for a paused holder, a holder refused by the database). A run that never produced
 * that case has not tested the property, whatever it did otherwise. So every check:
 *
 * <ol>
 *   <li>names the events it must observe, in {@link PropertyResult#counts()}, each with the number
 *       observed and the number required ({@link PropertyResult.Count#required()} &gt; 0). The
 *       required numbers may depend on the database (the mechanism differs: on SQLite a claim waits
 *       for the write lock of an open transaction instead of taking over across it) and on the
 *       {@link Size};
 *   <li>counts what happened, read back from the run (the recorded history, the database), never
 *       what the schedule planned to happen;
 *   <li>reports violations in {@link PropertyResult#violations()} and {@link
 *       PropertyResult#failure()}.
 * </ol>
 *
 * The verdict ({@link PropertyResult#verdict()}) follows from that alone: {@code FAILS} when a
 * violation was found; otherwise {@code INCONCLUSIVE} when any required event was observed fewer
 * times than required; otherwise {@code HOLDS}. The runner prints every count, exits 1 on a
 * failure, 3 when a property was inconclusive, and 0 only when every property holds. A property
 * with no required event can never be inconclusive: do not write one.
 *
 * <h2>Negative controls</h2>
 *
 * {@link #controls()} returns deliberately broken variants of the real mechanism the property
 * checks (lease-core's claim or verify statement mutated, lease-jdbc's fence left out, its rollback
 * lost), each run by the same check. A control is caught when its verdict is {@code FAILS}; an
 * inconclusive control is not caught. A control may stop at its first violation.
 */
public interface ConformanceProperty {

  /** A short id, the row label of the runner's table and what {@code --only} selects. */
  String id();

  /**
   * The property in one short line (at most 110 characters): what the runner prints above its
   * progress; {@link #summary()} is the whole sentence, as docs/conformance.md gives it.
   */
  String headline();

  /** The property in one sentence. */
  String summary();

  /**
   * What a run must observe to count as a test, in one sentence (docs/conformance.md's table says
   * it).
   */
  String countsAsATest();

  /**
   * Checks the property.
   *
   * @param seed the seed of every random choice; the same seed replays the same schedules
   * @param progress told now and then how far the run is, for the runner's progress line
   */
  PropertyResult check(Target target, Size size, long seed, Progress progress);

  /** The negative controls of this property; none by default. */
  default List<NegativeControl> controls() {
    return List.of();
  }

  /** Receives progress: schedules tried so far. */
  @FunctionalInterface
  interface Progress {
    Progress NONE = (schedules, faults) -> {};

    void update(long schedules, long faults);
  }
}
