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
 */
final class LeaderElection {

  private static final Logger log = LoggerFactory.getLogger(LeaderElection.class);

  private final LeaseManager manager;
  private final String name;
  private final long pollMillis;
  private volatile boolean stopped;
  private volatile Thread thread;

  LeaderElection(LeaseManager manager, String name) {
    this.manager = manager;
    this.name = name;
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
