package dev.lease.core;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What to do when work under a <em>lost</em> lease did not stop within the grace period. The
 * default fails the process, as a lost leader should: the work may still act on shared state its
 * successor now owns. A release, {@link LeaseManager#close()} or a scheduler closing is not a loss
 * and never calls it (work that will not stop then is logged and left running; the lease is
 * released).
 */
@FunctionalInterface
public interface FailurePolicy {

  /**
   * Called at most once per lease, on a loss-handling thread of the manager, with a work thread
   * that is still running.
   */
  void workDidNotStop(Lease lease, Thread worker);

  /** Logs an error and halts the JVM with exit status 70 (shutdown hooks do not run). */
  static FailurePolicy haltProcess() {
    return (lease, worker) -> {
      Logger log = LoggerFactory.getLogger(FailurePolicy.class);
      log.error(
          "lease {} term {} instance {} was lost and its work thread {} did not stop within"
              + " the grace period; halting the process",
          lease.name(),
          lease.term(),
          lease.instance(),
          worker.getName());
      Runtime.getRuntime().halt(70);
    };
  }

  /** Only logs; for tests, and for applications that handle stuck work themselves. */
  static FailurePolicy logOnly() {
    return (lease, worker) ->
        LoggerFactory.getLogger(FailurePolicy.class)
            .error(
                "lease {} term {} was lost and its work thread {} did not stop within the grace"
                    + " period",
                lease.name(),
                lease.term(),
                worker.getName());
  }
}
