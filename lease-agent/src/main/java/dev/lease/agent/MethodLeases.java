package dev.lease.agent;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.CallerWork;
import dev.lease.core.internal.LeaseInternals;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Methods mode, what the advice of a configured method calls: on entry claim the method's lease
 * (skip the method when another process holds it), keep it renewed, bind it to the thread; on exit
 * release it. Public for the instrumented code only; not an API.
 *
 * <p>The method runs on its caller's thread, which lease-core binds to the lease as the work under
 * it ({@link LeaseInternals#bindCurrentThread}, as {@code runUnder} binds its own thread), so the
 * lease ends in lease-core's order: a release ({@link LeaseManager#close()} at shutdown) interrupts
 * the method and waits up to the grace period for it to return before it gives the row back; a loss
 * interrupts it at once (its fenced transactions are refused from then on), and if it has not
 * returned after the grace period lease-core's failure policy runs, once ({@link LostLeasePolicy}:
 * the JVM halts with status 70). Nothing here times or halts anything.
 */
public final class MethodLeases {

  private static final Logger log = LoggerFactory.getLogger(MethodLeases.class);

  /**
   * Returned for a nested call of a method whose lease this thread already holds: run, no claim.
   */
  private static final Object NESTED = new Object();

  /** Binds a method's thread to its lease as the work under it. */
  private static final AgentRules RULES = AgentRules.current();

  private static volatile LeaseManager manager;

  /** The configured method running under each lease, for the failure policy's message. */
  private static final Map<Lease, String> RUNNING = new ConcurrentHashMap<>();

  private MethodLeases() {}

  static void install(LeaseManager leaseManager) {
    manager = leaseManager;
  }

  /** The configured method running under {@code lease}, or null. */
  static String runningUnder(Lease lease) {
    return RUNNING.get(lease);
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
    } catch (IllegalStateException e) {
      // the manager is closed: the JVM shuts down, and no lease is claimed any more
      log.info("skipping {}: the agent is shutting down (lease {} not claimed)", method, leaseName);
      return null;
    }
    if (claimed.isEmpty()) {
      log.info("skipping {}: lease {} is held by another process", method, leaseName);
      return null;
    }
    Lease lease = claimed.get();
    try {
      return new Run(lease, method);
    } catch (RuntimeException e) {
      // closed meanwhile (shutdown), or lost before the method began: it must not run
      log.info(
          "skipping {}: lease {} ended before the method began ({})",
          method,
          leaseName,
          e.toString());
      release(lease, method);
      return null;
    }
  }

  /** Exit advice: releases the lease of {@code handle} (null when the method was skipped). */
  public static void exit(Object handle) {
    if (handle instanceof Run) {
      ((Run) handle).end();
    }
  }

  private static void release(Lease lease, String method) {
    try {
      lease.release(); // nothing to do if it was lost, or released by close()
    } catch (LeaseException e) {
      log.warn(
          "could not release lease {} after {}; it expires by itself: {}",
          lease.name(),
          method,
          e.getMessage());
    }
  }

  /** One run of a configured method under its lease, on the caller's thread. */
  private static final class Run {
    private final Lease lease;
    private final String method;
    private final CallerWork work;
    private final LeaseContext.Scope scope;
    private final Lease.Registration onLoss;

    /**
     * @throws IllegalStateException if the manager was closed (shutdown) or the lease released
     * @throws dev.lease.core.LeaseLostException if the lease is no longer held
     */
    Run(Lease lease, String method) {
      this.lease = lease;
      this.method = method;
      RUNNING.put(lease, method);
      try {
        this.work = RULES.bindMethodThread(lease);
      } catch (RuntimeException e) {
        RUNNING.remove(lease);
        throw e;
      }
      try {
        lease.hold();
      } catch (RuntimeException e) {
        work.end();
        RUNNING.remove(lease);
        throw e;
      }
      this.scope = LeaseContext.bind(lease);
      this.onLoss = lease.onLoss(this::lost);
      log.info("running {} under lease {} term {}", method, lease.name(), lease.term());
    }

    private void lost(Lease l) {
      log.warn(
          "lease {} term {} lost while {} runs: its thread is interrupted and its transactions are"
              + " refused; if it has not returned within the grace period of {} ms, the JVM halts"
              + " (status {})",
          l.name(),
          l.term(),
          method,
          l.manager().timings().gracePeriod().toMillis(),
          LostLeasePolicy.EXIT_LOST);
    }

    void end() {
      onLoss.close();
      scope.close();
      boolean stopped = work.end();
      RUNNING.remove(lease);
      if (stopped) {
        // the interrupt was the lease's (its loss, or its release at shutdown), not the caller's:
        // the calling thread goes on with other work
        Thread.interrupted();
        log.info(
            "{} returned after it was interrupted: lease {} term {} was {}",
            method,
            lease.name(),
            lease.term(),
            lease.isLost() ? "lost" : "released");
      }
      release(lease, method);
    }
  }
}
