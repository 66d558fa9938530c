package dev.lease.agent;

import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;

/**
 * The agent's failure policy, which lease-core runs at most once per lease, never for a release or
 * a shutdown, and only when the work bound to a <em>lost</em> lease has not ended within the grace
 * period: it halts the JVM with status {@value #EXIT_LOST}, saying why on stderr.
 *
 * <p>The work is a method of methods mode that did not return after its thread was interrupted, or,
 * in leader mode with {@code on-loss=halt}, the process itself: the agent cannot stop the
 * application's threads, so the election thread stands for them as the leader lease's work and
 * never ends it after a loss (only a shutdown ends it).
 */
final class LostLeasePolicy implements FailurePolicy {

  /** Exit status after a loss whose work did not stop (sysexits EX_SOFTWARE, as lease-core's). */
  static final int EXIT_LOST = 70;

  @Override
  public void workDidNotStop(Lease lease, Thread worker) {
    System.err.println("lease-agent: " + message(lease, worker, MethodLeases.runningUnder(lease)));
    System.err.flush();
    Runtime.getRuntime().halt(EXIT_LOST);
  }

  static String message(Lease lease, Thread worker, String method) {
    long grace = lease.manager().timings().gracePeriod().toMillis();
    String lost = "lease " + lease.name() + " term " + lease.term() + " was lost";
    if (method == null) {
      return lost
          + " and the grace period of "
          + grace
          + " ms has passed; halting the JVM (status "
          + EXIT_LOST
          + ", on-loss=halt)";
    }
    return lost
        + " while "
        + method
        + " ran on thread "
        + worker.getName()
        + ", which did not return within the grace period of "
        + grace
        + " ms after it was interrupted; halting the JVM (status "
        + EXIT_LOST
        + ")";
  }
}
