package dev.lease.core.scheduler;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseNames;
import java.time.Instant;
import java.util.Objects;

/**
 * A job of a {@link LeaseScheduler}: a name (the lease claimed for each instant, the same on every
 * replica), its {@link Schedule} and the work of one round.
 */
public final class ScheduledJob {

  private final String name;
  private final Schedule schedule;
  private final Work work;

  private ScheduledJob(String name, Schedule schedule, Work work) {
    this.name = name;
    this.schedule = schedule;
    this.work = work;
  }

  /**
   * A job; the name is checked here, since a name the lease table cannot hold could never be
   * claimed.
   *
   * @throws IllegalArgumentException if the name is empty, too long for the lease table or contains
   *     control characters
   */
  public static ScheduledJob of(String name, Schedule schedule, Work work) {
    try {
      LeaseNames.validate(name);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("job name could never be claimed: " + e.getMessage(), e);
    }
    return new ScheduledJob(
        name, Objects.requireNonNull(schedule, "schedule"), Objects.requireNonNull(work, "work"));
  }

  public String name() {
    return name;
  }

  public Schedule schedule() {
    return schedule;
  }

  public Work work() {
    return work;
  }

  @Override
  public String toString() {
    return "ScheduledJob[" + name + ", " + schedule + "]";
  }

  /** The work of one round. */
  @FunctionalInterface
  public interface Work {
    /**
     * Runs the round of {@code round.instant()} on its own thread, with the round's lease bound to
     * it ({@link LeaseContext}), so transactions on fenced connections are verified against it. The
     * thread is interrupted when the lease is lost or the scheduler closes: stop promptly. A round
     * that returns or throws has run to its end and is not run again; a round cut short (lease
     * lost, scheduler closed, process died) runs again once, on any replica.
     */
    void run(Round round) throws Exception;
  }

  /**
   * One round: the job, the instant it runs for (database clock), the lease it runs under, and
   * whether it is the one rerun of a round that was cut short.
   */
  public record Round(String job, Instant instant, Lease lease, boolean rerun) {}
}
