package dev.lease.core;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The work {@link LeaseManager#runUnder} runs under a lease (or a caller's own thread bound with
 * {@link WorkRunner#bindCurrentThread}): its thread, and whether it ended on its own or was stopped
 * (interrupted because the lease was lost or released). A release waits for it to end, up to the
 * grace period, before it gives the row back; a loss waits as long before it runs the failure
 * policy.
 *
 * <p>Once {@link #workEnded()} returned, the thread is never interrupted by a stop: a caller's
 * thread goes on with other work after its lease, and a late interrupt would hit that work.
 */
final class BoundWork {

  private static final int RUNNING = 0;
  private static final int ENDED = 1;
  private static final int STOPPED = 2;

  final Thread thread;
  private final AtomicInteger state = new AtomicInteger(RUNNING);
  private final CountDownLatch ended = new CountDownLatch(1);

  /** Ended, or given up on by a release whose grace period passed: runUnder may return. */
  private final CountDownLatch settled = new CountDownLatch(1);

  BoundWork(Thread thread) {
    this.thread = thread;
  }

  /**
   * Asks the work to stop: interrupts its thread, unless it already ended. The first request that
   * comes before the work ended makes it "stopped" for good, even if it then returns normally.
   */
  synchronized void requestStop() {
    if (hasEnded()) {
      return;
    }
    state.compareAndSet(RUNNING, STOPPED);
    thread.interrupt();
  }

  /**
   * Called by the work's thread as its last act; no stop interrupts the thread after it returned
   * (it excludes {@link #requestStop()}, which checks for the end under the same lock).
   */
  void workEnded() {
    synchronized (this) {
      state.compareAndSet(RUNNING, ENDED);
      ended.countDown();
    }
    settled.countDown();
  }

  /** True if a stop was requested before the work ended. */
  boolean wasStopped() {
    return state.get() == STOPPED;
  }

  boolean hasEnded() {
    return ended.getCount() == 0;
  }

  /** Waits up to {@code nanos} for the work to end; true if it did. */
  boolean awaitEnd(long nanos) throws InterruptedException {
    return ended.await(Math.max(0, nanos), TimeUnit.NANOSECONDS);
  }

  /** A release stops waiting for work that did not stop within the grace period. */
  void giveUp() {
    settled.countDown();
  }

  void awaitSettled() throws InterruptedException {
    settled.await();
  }
}
