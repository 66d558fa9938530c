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
 * <p>One daemon thread serves every manager of the JVM, while borrows are in flight. Guards are not
 * removed when their borrow ends (a removal from the heap is linear); the thread drops them at
 * their deadline, and wakes at most every {@link #TICK_NANOS} while any are pending, so an
 * interrupt comes at most that late. When no borrow has been in flight for {@link #LINGER_NANOS}
 * the thread drops what is left and ends (the next borrow starts another), so no thread outlives
 * the managers that use it (issue 37); an interrupt is taken as a request to end, in the same way.
 */
final class BorrowWatchdog {

  /** The watchdog's coarsest wake-up: attempt timeouts are hundreds of milliseconds or more. */
  private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  /** How long the thread waits with no borrow in flight before it ends. */
  static final long LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

  private static final Object LOCK = new Object();
  private static final PriorityQueue<Guard> PENDING =
      new PriorityQueue<>((a, b) -> Long.compare(a.deadlineNanos - b.deadlineNanos, 0));
  private static Thread thread; // guarded by LOCK
  private static boolean waiting; // guarded by LOCK: the thread waits with nothing pending
  private static long wakeAtNanos; // guarded by LOCK: when a waiting thread with guards wakes
  private static int inFlight; // guarded by LOCK: guards whose borrow has not ended

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
      if (state.compareAndSet(BORROWING, ENDED)) {
        ended();
        return true;
      }
      if (state.get() == ENDED) {
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
        inFlight--; // on the watchdog thread, under LOCK
        borrower.interrupt();
        state.set(FIRED);
      }
    }
  }

  /** A borrow ended before its deadline: the thread may end once none is in flight. */
  private static void ended() {
    synchronized (LOCK) {
      if (--inFlight == 0 && waiting) {
        LOCK.notifyAll();
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
      inFlight++;
      // every manager's guards share the heap: wake the thread only if this deadline comes first
      if (waiting && (PENDING.size() == 1 || deadlineNanos - wakeAtNanos < 0)) {
        LOCK.notifyAll();
      }
    }
    return g;
  }

  private static void watch() {
    synchronized (LOCK) {
      long idleSince = System.nanoTime();
      boolean interrupted = false;
      while (true) {
        long now = System.nanoTime();
        Guard head;
        while ((head = PENDING.peek()) != null && head.deadlineNanos - now <= 0) {
          PENDING.poll().fire();
        }
        if (inFlight > 0) {
          idleSince = now;
        } else if (interrupted || now - idleSince >= LINGER_NANOS) {
          PENDING.clear(); // ended borrows only: nothing left to interrupt
          thread = null; // the next guard starts another
          return;
        }
        waiting = true;
        try {
          long wait =
              inFlight == 0
                  ? LINGER_NANOS - (now - idleSince)
                  : head == null ? LINGER_NANOS : Math.max(head.deadlineNanos - now, TICK_NANOS);
          wakeAtNanos = now + wait;
          TimeUnit.NANOSECONDS.timedWait(LOCK, wait);
        } catch (InterruptedException e) {
          interrupted = true; // asked to end: as soon as no borrow is in flight
        } finally {
          waiting = false;
        }
      }
    }
  }
}
