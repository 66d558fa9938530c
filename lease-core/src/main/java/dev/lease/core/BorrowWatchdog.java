package dev.lease.core;

import java.util.PriorityQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Bounds a connection borrow that runs on the caller's own thread: at the attempt's deadline it
 * interrupts the borrowing thread, which ends a pool's wait (HikariCP, DBCP, Tomcat's pool and the
 * JDK's blocking queues all answer an interrupt with an exception). Attempts used to run on an
 * attempt thread while the caller waited for it with a timeout; the hand-off there and back cost
 * about as much as a claim statement itself (issue 24), and this bound costs one heap insert.
 *
 * <p>One daemon thread serves every manager of the JVM. Guards are not removed when their borrow
 * ends (a removal from the heap is linear); the thread drops them at their deadline, and wakes at
 * most every {@link #TICK_NANOS} while any are pending, so an interrupt comes at most that late.
 */
final class BorrowWatchdog {

  /** The watchdog's coarsest wake-up: attempt timeouts are hundreds of milliseconds or more. */
  private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  private static final Object LOCK = new Object();
  private static final PriorityQueue<Guard> PENDING =
      new PriorityQueue<>((a, b) -> Long.compare(a.deadlineNanos - b.deadlineNanos, 0));
  private static Thread thread; // guarded by LOCK
  private static boolean waiting; // guarded by LOCK: the thread waits with nothing pending
  private static long wakeAtNanos; // guarded by LOCK: when a waiting thread with guards wakes

  private BorrowWatchdog() {}

  private static final int BORROWING = 0;
  private static final int ENDED = 1;
  private static final int FIRING = 2;
  private static final int FIRED = 3;
  private static final int CLEARED = 4;

  /** One borrow on one thread, interrupted at {@code deadlineNanos} if it has not ended. */
  static final class Guard {
    private final Thread borrower = Thread.currentThread();
    private final long deadlineNanos;
    private final AtomicInteger state = new AtomicInteger(BORROWING);

    private Guard(long deadlineNanos) {
      this.deadlineNanos = deadlineNanos;
    }

    /**
     * Ends the guard (idempotent); on the borrowing thread. True if the borrow ended before the
     * watchdog interrupted it; false if it was interrupted: that interrupt is then cleared here, so
     * it never reaches the caller's code.
     */
    boolean end() {
      if (state.compareAndSet(BORROWING, ENDED) || state.get() == ENDED) {
        return true;
      }
      while (state.get() == FIRING) {
        Thread.onSpinWait(); // the interrupt is being delivered: clear it only once it landed
      }
      if (state.compareAndSet(FIRED, CLEARED)) {
        Thread.interrupted();
      }
      return false;
    }

    private void fire() {
      if (state.compareAndSet(BORROWING, FIRING)) {
        borrower.interrupt();
        state.set(FIRED);
      }
    }
  }

  /** Guards a borrow by the calling thread until {@link Guard#end()}. */
  static Guard guard(long deadlineNanos) {
    Guard g = new Guard(deadlineNanos);
    synchronized (LOCK) {
      if (thread == null) {
        thread = new Thread(BorrowWatchdog::watch, "lease-borrow-watchdog");
        thread.setDaemon(true);
        thread.start();
      }
      PENDING.add(g);
      // every manager's guards share the heap: wake the thread only if this deadline comes first
      if (waiting && (PENDING.size() == 1 || deadlineNanos - wakeAtNanos < 0)) {
        LOCK.notifyAll();
      }
    }
    return g;
  }

  private static void watch() {
    synchronized (LOCK) {
      while (true) {
        long now = System.nanoTime();
        Guard head;
        while ((head = PENDING.peek()) != null && head.deadlineNanos - now <= 0) {
          PENDING.poll().fire();
        }
        waiting = true;
        try {
          if (head == null) {
            LOCK.wait();
          } else {
            long wait = Math.max(head.deadlineNanos - now, TICK_NANOS);
            wakeAtNanos = now + wait;
            TimeUnit.NANOSECONDS.timedWait(LOCK, wait);
          }
        } catch (InterruptedException e) {
          // nobody interrupts this thread on purpose; it serves the whole JVM, so it goes on
        } finally {
          waiting = false;
        }
      }
    }
  }
}
