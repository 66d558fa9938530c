package dev.lease.agent;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.LeaseInternals;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Methods mode, what the advice of a configured method calls: on entry claim the method's lease
 * (skip the method when another process holds it), keep it renewed, bind it to the thread; on exit
 * release it. Public for the instrumented code only; not an API.
 *
 * <p>When the lease is lost while the method runs, its thread is interrupted and its fenced
 * transactions are refused; if the method has not returned after the grace period, the process
 * halts (status 70), as lease-core's default failure policy does for work under a lost lease.
 */
public final class MethodLeases {

  private static final Logger log = LoggerFactory.getLogger(MethodLeases.class);

  /**
   * Returned for a nested call of a method whose lease this thread already holds: run, no claim.
   */
  private static final Object NESTED = new Object();

  private static volatile LeaseManager manager;
  private static volatile ScheduledExecutorService timers;

  private MethodLeases() {}

  static void install(LeaseManager leaseManager) {
    timers =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "lease-agent-grace");
              t.setDaemon(true);
              return t;
            });
    manager = leaseManager;
  }

  /**
   * Enter advice.
   *
   * @return a non-null handle to run the method under the lease; null to skip the method
   */
  public static Object enter(String leaseName, String method) {
    LeaseManager m = manager;
    if (m == null) {
      log.error(
          "{} runs under lease {}, but the agent is not started; skipping it", method, leaseName);
      return null;
    }
    Lease bound = LeaseInternals.currentOrNull();
    if (bound != null && bound.name().equals(leaseName) && bound.isHeld()) {
      return NESTED;
    }
    Optional<Lease> claimed;
    try {
      claimed = m.tryClaim(leaseName);
    } catch (LeaseException e) {
      // fail closed: without a lease the method must not run
      log.warn("skipping {}: could not claim lease {}: {}", method, leaseName, e.getMessage());
      return null;
    }
    if (claimed.isEmpty()) {
      log.info("skipping {}: lease {} is held by another process", method, leaseName);
      return null;
    }
    Lease lease = claimed.get().hold();
    return new Run(lease, method, Thread.currentThread());
  }

  /** Exit advice: releases the lease of {@code handle} (null when the method was skipped). */
  public static void exit(Object handle) {
    if (handle instanceof Run) {
      ((Run) handle).end();
    }
  }

  /** One run of a configured method under its lease. */
  private static final class Run {
    private final Lease lease;
    private final String method;
    private final Thread thread;
    private final LeaseContext.Scope scope;
    private final Lease.Registration onLoss;
    private volatile boolean ended;

    Run(Lease lease, String method, Thread thread) {
      this.lease = lease;
      this.method = method;
      this.thread = thread;
      this.scope = LeaseContext.bind(lease);
      this.onLoss = lease.onLoss(this::lost);
      log.info("running {} under lease {} term {}", method, lease.name(), lease.term());
    }

    private void lost(Lease l) {
      log.warn(
          "lease {} term {} lost while {} runs; interrupting {}",
          l.name(),
          l.term(),
          method,
          thread.getName());
      thread.interrupt();
      timers.schedule(
          () -> {
            if (!ended) {
              log.error(
                  "{} did not stop within the grace period of {} ms after lease {} term {} was"
                      + " lost; halting the process",
                  method,
                  l.manager().timings().gracePeriod().toMillis(),
                  l.name(),
                  l.term());
              Runtime.getRuntime().halt(70);
            }
          },
          l.manager().timings().gracePeriod().toMillis(),
          TimeUnit.MILLISECONDS);
    }

    void end() {
      ended = true;
      onLoss.close();
      scope.close();
      try {
        lease.release();
      } catch (LeaseException e) {
        log.warn(
            "could not release lease {} after {}; it expires by itself: {}",
            lease.name(),
            method,
            e.getMessage());
      }
    }
  }
}
