package dev.lease.agent;

import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
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
 * <p>The loop: claim; while another process holds the lease, poll at the renew interval; once
 * claimed, keep it renewed until it is lost; then claim again. While this process does not hold the
 * lease, the process-wide lease is one that is not held (a placeholder before the first claim, the
 * lost lease after a loss), so fenced transactions are refused instead of running unfenced.
 *
 * <p>After a loss ({@code on-loss}): {@code halt} (the default, as lease-core's failure policy for
 * a lost leader) halts the JVM with status {@value #EXIT_LOST} once the grace period has passed,
 * its transactions refused meanwhile; {@code refuse} keeps the process running with its
 * transactions refused, and it claims the lease again when it is free. A release at shutdown is not
 * a loss.
 */
final class LeaderElection {

  private static final Logger log = LoggerFactory.getLogger(LeaderElection.class);

  /** Exit status after a loss with on-loss=halt (sysexits EX_SOFTWARE, as methods mode). */
  static final int EXIT_LOST = 70;

  private final LeaseManager manager;
  private final String name;
  private final long pollMillis;
  private final AgentConfig.OnLoss onLoss;
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
   * start), then keeps electing on a daemon thread.
   *
   * @throws LeaseException if the first attempt could not reach the lease database
   */
  void start() {
    LeaseInternals.bindProcessWide(LeaseInternals.notHeld(manager, name));
    Optional<Lease> first = manager.tryClaim(name);
    if (first.isPresent()) {
      // bound before the application's main starts, so its first transaction already runs fenced
      LeaseInternals.bindProcessWide(first.get().hold());
    } else {
      log.info(
          "lease {} is held by another process; this process waits as a replica (its"
              + " transactions are refused until it leads)",
          name);
    }
    Thread t = new Thread(() -> loop(first.orElse(null)), "lease-agent-leader");
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  /** At shutdown, before the manager releases the lease: never claim again. */
  void stop() {
    stopped = true;
    Thread t = thread;
    if (t != null) {
      t.interrupt();
    }
  }

  private void loop(Lease claimed) {
    Lease lease = claimed;
    while (!stopped) {
      try {
        if (lease == null) {
          lease = manager.tryClaim(name).orElse(null);
        }
        if (lease != null) {
          lead(lease);
          lease = null;
          if (stopped) {
            return;
          }
          continue; // claim again at once: the successor may have released it already
        }
      } catch (LeaseException e) {
        log.warn(
            "could not claim lease {}; retrying in {} ms: {}", name, pollMillis, e.getMessage());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (RuntimeException e) {
        log.error("leader election of lease {} failed; retrying in {} ms", name, pollMillis, e);
      }
      try {
        Thread.sleep(pollMillis); // the poll cadence of a replica, not a synchronisation
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /**
   * on-loss=halt: transactions stay refused (the lost lease is still the process-wide one) for the
   * grace period, then the JVM halts; a shutdown that begins meanwhile wins.
   */
  private void haltAfterGrace(Lease lease) throws InterruptedException {
    long grace = manager.timings().gracePeriod().toMillis();
    log.error(
        "lease {} term {} instance {} lost ({}); its transactions are refused, and the JVM halts"
            + " in {} ms (on-loss=halt; on-loss=refuse keeps it running as a replica)",
        lease.name(),
        lease.term(),
        lease.instance(),
        lease.lossReason().map(Enum::name).orElse("?"),
        grace);
    Thread.sleep(grace); // the grace period itself, not a synchronisation
    if (stopped) {
      return;
    }
    System.err.println(
        "lease-agent: lease "
            + lease.name()
            + " term "
            + lease.term()
            + " was lost and the grace period of "
            + grace
            + " ms has passed; halting the JVM (status "
            + EXIT_LOST
            + ", on-loss=halt)");
    System.err.flush();
    Runtime.getRuntime().halt(EXIT_LOST);
  }

  /** Holds {@code lease} as the process-wide lease until it is lost or released. */
  private void lead(Lease lease) throws InterruptedException {
    CountDownLatch ended = new CountDownLatch(1);
    lease.onLoss(l -> ended.countDown());
    lease.hold();
    LeaseInternals.bindProcessWide(lease);
    log.info(
        "this process leads: lease {} term {} instance {}; its transactions are fenced by it",
        lease.name(),
        lease.term(),
        lease.instance());
    while (!ended.await(pollMillis, TimeUnit.MILLISECONDS)) {
      if (!lease.isHeld()) { // released at shutdown, or the local deadline passed
        break;
      }
    }
    if (!stopped && onLoss == AgentConfig.OnLoss.HALT && lease.lossReason().isPresent()) {
      haltAfterGrace(lease);
    }
    // the lost lease stays process-wide: it is not held, so transactions are refused until the next
    // claim replaces it
    log.warn(
        "this process no longer leads: lease {} term {} ({}); transactions are refused until"
            + " it claims the lease again",
        lease.name(),
        lease.term(),
        lease.lossReason().map(Enum::name).orElse("released"));
  }
}
