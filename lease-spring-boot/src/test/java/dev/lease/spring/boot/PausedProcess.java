package dev.lease.spring.boot;

import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.MonotonicClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.LockSupport;

/**
 * Pauses a replica's lease keeping the way a stopped process (a GC pause, a frozen VM) would: its
 * monotonic clock stands still and its lease statements (renewals, and every other attempt: they
 * all run on the attempt executor) do not run. Given to the replica's LeaseManager through a {@link
 * LeaseManagerBuilderCustomizer}, with lease-core's test hooks.
 */
final class PausedProcess implements MonotonicClock, Executor, LeaseManagerBuilderCustomizer {

  private final ExecutorService attempts =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "paused-process-renewal");
            t.setDaemon(true);
            return t;
          });
  private final List<Runnable> held = new ArrayList<>();
  private boolean renewalsPaused;
  private long slowNanos;
  private boolean clockFrozen;
  private long frozenAt;
  private long offset;

  @Override
  public void customize(dev.lease.core.LeaseManager.Builder builder) {
    LeaseInternals.attemptExecutor(LeaseInternals.clock(builder, this), this);
  }

  @Override
  public synchronized long nanoTime() {
    return clockFrozen ? frozenAt : System.nanoTime() - offset;
  }

  @Override
  public void execute(Runnable renewal) {
    synchronized (this) {
      if (renewalsPaused) {
        held.add(renewal);
        return;
      }
    }
    long slow;
    synchronized (this) {
      slow = slowNanos;
    }
    if (slow == 0) {
      attempts.execute(renewal);
      return;
    }
    attempts.execute(
        () -> {
          LockSupport.parkNanos(slow); // a slow network or pool: the statement starts later
          renewal.run();
        });
  }

  /** Every lease statement from now on starts {@code delay} late (zero: on time). */
  synchronized void slowAttempts(Duration delay) {
    slowNanos = delay.toNanos();
  }

  /** Renewals stop; with {@code freezeClock} the process also stops noticing time pass. */
  synchronized void pause(boolean freezeClock) {
    renewalsPaused = true;
    if (freezeClock) {
      frozenAt = nanoTime();
      clockFrozen = true;
    }
  }

  /**
   * Time runs again (the pause's length passes at once), renewals still held: the process runs
   * before its lease keeping noticed anything.
   */
  synchronized void resumeClockOnly() {
    clockFrozen = false;
  }

  /**
   * Time runs again (the pause's length passes at once, as after a real pause) and renewals run.
   */
  void resume() {
    List<Runnable> run;
    synchronized (this) {
      clockFrozen = false;
      renewalsPaused = false;
      run = new ArrayList<>(held);
      held.clear();
    }
    run.forEach(attempts::execute);
  }
}
