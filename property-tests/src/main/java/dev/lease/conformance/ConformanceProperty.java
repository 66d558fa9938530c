package dev.lease.conformance;

/**
 * One property of DESIGN.md's invariants, checkable against a database. Implementations live in
 * this module's main sources, so the conformance runner jar carries them and the module's tests run
 * the very same code against the four CI databases.
 */
public interface ConformanceProperty {

  /** A short id, the row label of the runner's table. */
  String id();

  /** The property in one sentence. */
  String summary();

  /**
   * Checks the property.
   *
   * @param seed the seed of every random choice; the same seed replays the same schedules
   * @param progress told now and then how far the run is, for the runner's progress line
   */
  PropertyResult check(Target target, Size size, long seed, Progress progress);

  /** Receives progress: schedules tried so far. */
  @FunctionalInterface
  interface Progress {
    Progress NONE = (schedules, faults) -> {};

    void update(long schedules, long faults);
  }
}
