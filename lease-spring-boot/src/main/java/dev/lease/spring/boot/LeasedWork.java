package dev.lease.spring.boot;

import dev.lease.core.Lease;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@link Leased} calls running now, in this replica: what the health indicator checks (work
 * whose lease is no longer held) and what a shutdown stops before the leases are released.
 */
public final class LeasedWork {

  private final Set<Running> running = ConcurrentHashMap.newKeySet();

  /** One running call: its lease and its thread. */
  public static final class Running {
    private final Lease lease;
    private final Thread thread;
    private boolean ended;
    private boolean interruptedByUs;

    Running(Lease lease, Thread thread) {
      this.lease = lease;
      this.thread = thread;
    }

    public Lease lease() {
      return lease;
    }

    public Thread thread() {
      return thread;
    }

    /** Interrupts the call's thread unless the call has ended; true if it did. */
    synchronized boolean interrupt() {
      if (ended) {
        return false;
      }
      interruptedByUs = true;
      thread.interrupt();
      return true;
    }

    /** Marks the call ended; true if this registry interrupted its thread. */
    synchronized boolean end() {
      ended = true;
      return interruptedByUs;
    }

    synchronized boolean ended() {
      return ended;
    }
  }

  Running begin(Lease lease, Thread thread) {
    Running r = new Running(lease, thread);
    running.add(r);
    return r;
  }

  void end(Running r) {
    running.remove(r);
    synchronized (this) {
      notifyAll();
    }
  }

  /** The calls running now. */
  public List<Running> running() {
    return List.copyOf(running);
  }

  /**
   * Interrupts every running call and waits, at most {@code max}, for them to end and release their
   * leases: a shutdown stops the work before its leases are released, and the pool stays open for
   * the release.
   *
   * @return true if every call ended in time
   */
  boolean stopAll(Duration max) {
    running().forEach(Running::interrupt);
    long deadline = System.nanoTime() + max.toNanos();
    synchronized (this) {
      long left;
      while (!running.isEmpty() && (left = deadline - System.nanoTime()) > 0) {
        try {
          wait(Math.max(1, left / 1_000_000));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
    }
    return running.isEmpty();
  }
}
