package dev.lease.agent;

import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseLostException;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.CallerWork;
import dev.lease.core.internal.LeaseInternals;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leader mode: this process holds one named lease whenever it can, and that lease is the
 * process-wide lease of every thread ({@link LeaseInternals#bindProcessWide}), so every fenced
 * transaction of the application runs under it.
 *
 * <p>The loop, on the election thread: claim; while another process holds the lease, poll at the
 * renew interval; once claimed, keep it renewed until it is lost; then claim again. While this
 * process does not hold the lease, the process-wide lease is one that is not held (a placeholder
 * before the first claim, the lost lease after a loss), so fenced transactions are refused instead
 * of running unfenced.
 *
 * <p>After a loss ({@code on-loss}): {@code halt} (the default, as lease-core's failure policy for
 * a lost leader) keeps the transactions refused and lets lease-core's failure policy ({@link
 * LostLeasePolicy}) halt the JVM with status 70 once the grace period has passed: the work under
 * the leader lease is the application itself, which the agent cannot stop, so the election thread
 * stands for it, bound to the lease as its work ({@link LeaseInternals#bindCurrentThread}), and
 * never ends that work after a loss. {@code refuse} binds no work: the process keeps running with
 * its transactions refused, and claims the lease again when it is free.
 *
 * <p>Shutdown, in order ({@link #stop()}, then the manager's close): the election stops (no claim
 * begins after it; a claim in flight completes and is given back), its work under the lease ends
 * (so a shutdown during the grace period after a loss never halts the JVM: lease-core's policy runs
 * only for work that did not end), and the manager releases the lease, so a replica takes over at
 * once. A release at shutdown is not a loss.
 */
final class LeaderElection {

  private static final Logger log = LoggerFactory.getLogger(LeaderElection.class);

  /**
   * The shutdown order (false only in the negative control of the shutdown test: the manager closes
   * while the election still runs, and what the election then meets is logged as an error).
   */
  private static final boolean ORDERED_SHUTDOWN = AgentRules.current().stopsElectionBeforeManager();

  private final LeaseManager manager;
  private final String name;
  private final long pollMillis;
  private final AgentConfig.OnLoss onLoss;
  private final CountDownLatch stopping = new CountDownLatch(1);

  /** Counted down once the first claim (made before main) leads, or failed to. */
  private final CountDownLatch firstLead = new CountDownLatch(1);

  private volatile boolean stopped;
  private volatile Thread thread;

  LeaderElection(LeaseManager manager, String name, AgentConfig.OnLoss onLoss) {
    this.manager = manager;
    this.name = name;
    this.onLoss = onLoss;
    this.pollMillis = manager.timings().renewInterval().toMillis();
  }

  /**
   * Makes the first claim attempt on the calling thread (so that a database problem shows at
   * start), then keeps electing on a daemon thread. A first claim that succeeded leads before this
   * returns, so the application's first transaction already runs fenced by it.
   *
   * @throws LeaseException if the first attempt could not reach the lease database
   */
  void start() {
    LeaseInternals.bindProcessWide(LeaseInternals.notHeld(manager, name));
    Optional<Lease> first = manager.tryClaim(name);
    if (first.isEmpty()) {
      log.info(
          "lease {} is held by another process; this process waits as a replica (its"
              + " transactions are refused until it leads)",
          name);
    }
    Thread t = new Thread(() -> loop(first.orElse(null)), "lease-agent-leader");
    t.setDaemon(true);
    thread = t;
    t.start();
    if (first.isPresent()) {
      try {
        // binding is local (no statement): it takes milliseconds
        if (!firstLead.await(
            manager.timings().attemptTimeout().toMillis(), TimeUnit.MILLISECONDS)) {
          log.warn("the election thread has not bound lease {} yet; main starts anyway", name);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * At shutdown, before the manager closes: no claim begins after this, and the election thread
   * ends (its work under the lease with it). Waits for it at most two attempt timeouts (a claim is
   * two statements); a claim in flight then completes and the election thread gives it back.
   */
  void stop() {
    stopped = true;
    stopping.countDown();
    Thread t = thread;
    if (t == null || t == Thread.currentThread()) {
      return;
    }
    t.interrupt();
    if (!ORDERED_SHUTDOWN) {
      return;
    }
    try {
      t.join(2 * manager.timings().attemptTimeout().toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (t.isAlive()) {
      log.debug("the election of lease {} has not ended; closing the manager anyway", name);
    }
  }

  /**
   * After {@link #stop()}, at a graceful shutdown: hands the lease this process still leads with to
   * the process whose instance is {@code successor} ({@code Lease.transferTo}), so it takes over at
   * its next poll instead of after a claim race. False if this process does not lead (nothing to
   * hand over) or the transfer found the lease no longer ours; the manager's close then releases
   * what is left as usual.
   */
  boolean transferTo(String successor) {
    for (Lease l : manager.held()) {
      if (l.name().equals(name)) {
        try {
          boolean done = l.transferTo(successor);
          log.info(
              done
                  ? "shutting down: handed lease {} to {}"
                  : "shutting down: could not hand lease {} to {}; it is no longer ours",
              name,
              successor);
          return done;
        } catch (LeaseException e) {
          log.warn(
              "shutting down: could not hand lease {} to {}: {}", name, successor, e.getMessage());
          return false;
        }
      }
    }
    return false;
  }

  private void loop(Lease claimed) {
    Lease lease = claimed;
    try {
      while (!stopped) {
        try {
          if (lease == null) {
            lease = manager.tryClaim(name).orElse(null);
          }
          if (lease != null) {
            Lease l = lease;
            lease = null;
            if (stopped) {
              giveBack(l); // completed as the shutdown began: never lead with it
              return;
            }
            lead(l);
            continue; // claim again at once: the successor may have released it already
          }
        } catch (LeaseException e) {
          if (stopped) {
            return;
          }
          log.warn(
              "could not claim lease {}; retrying in {} ms: {}", name, pollMillis, e.getMessage());
        } catch (IllegalStateException e) {
          if ((stopped || LeaseInternals.isClosed(manager)) && ORDERED_SHUTDOWN) {
            // the manager closed (shutdown): what was claimed meanwhile it gave back itself
            log.debug("the election of lease {} ends: the agent shuts down ({})", name, e);
            return;
          }
          log.error("leader election of lease {} failed; retrying in {} ms", name, pollMillis, e);
        } catch (RuntimeException e) {
          log.error("leader election of lease {} failed; retrying in {} ms", name, pollMillis, e);
        } finally {
          firstLead.countDown();
        }
        if (awaitStop(pollMillis)) {
          return; // the poll cadence of a replica, cut short by a shutdown
        }
      }
    } finally {
      firstLead.countDown();
    }
  }

  /**
   * Holds {@code lease} as the process-wide lease until it is lost or released, or the election
   * stops.
   */
  private void lead(Lease lease) {
    CountDownLatch lost = new CountDownLatch(1);
    Lease.Registration registration = lease.onLoss(l -> lost.countDown());
    CallerWork work = null;
    try {
      if (onLoss == AgentConfig.OnLoss.HALT) {
        // bound before the lease becomes process-wide: no transaction runs under it unwatched
        work = LeaseInternals.bindCurrentThread(lease);
      }
      lease.hold();
      LeaseInternals.bindProcessWide(lease);
      firstLead.countDown();
      log.info(
          "this process leads: lease {} term {} instance {}; its transactions are fenced by it",
          lease.name(),
          lease.term(),
          lease.instance());
      awaitEnd(lease, lost);
      if (stopped) {
        return;
      }
      if (work != null && lease.isLost()) {
        log.error(
            "lease {} term {} instance {} lost ({}); its transactions are refused, and the JVM halts"
                + " when the grace period of {} ms has passed (on-loss=halt; on-loss=refuse keeps"
                + " it running as a replica)",
            lease.name(),
            lease.term(),
            lease.instance(),
            lease.lossReason().map(Enum::name).orElse("?"),
            manager.timings().gracePeriod().toMillis());
        // the process's work does not stop: lease-core's failure policy halts the JVM; only a
        // shutdown ends this wait (and the work, so the policy does not run)
        awaitStopUninterruptibly();
        return;
      }
      // the lost lease stays process-wide: it is not held, so transactions are refused until the
      // next claim replaces it
      log.warn(
          "this process no longer leads: lease {} term {} ({}); transactions are refused until"
              + " it claims the lease again",
          lease.name(),
          lease.term(),
          lease.lossReason().map(Enum::name).orElse("released"));
    } catch (LeaseLostException e) {
      // lost before it became process-wide: nothing ran under it
      log.warn("lease {} term {} was lost before this process led with it", name, lease.term());
    } finally {
      registration.close();
      if (work != null && work.end()) {
        Thread.interrupted(); // the lease's interrupt (its release at shutdown, or its loss)
      }
    }
  }

  /** Until the lease is lost or released, or the election stops. */
  private void awaitEnd(Lease lease, CountDownLatch lost) {
    while (!stopped) {
      try {
        if (lost.await(pollMillis, TimeUnit.MILLISECONDS)) {
          return;
        }
      } catch (InterruptedException e) {
        // a stop, or lease-core stopping the work: a loss (whose callback may come later) or a
        // release, both seen below
      }
      if (!lease.isHeld()) { // lost, released, or the local deadline passed
        return;
      }
    }
  }

  /** True if the election stopped within {@code millis}. */
  private boolean awaitStop(long millis) {
    try {
      return stopping.await(millis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      return stopped;
    }
  }

  private void awaitStopUninterruptibly() {
    while (!stopped) {
      try {
        stopping.await();
      } catch (InterruptedException e) {
        // lease-core's stop of the work after the loss: the process's work does not stop
      }
    }
  }

  private void giveBack(Lease lease) {
    try {
      lease.release();
    } catch (LeaseException e) {
      log.debug("could not give back lease {} at shutdown; it expires by itself", name, e);
    }
  }
}
