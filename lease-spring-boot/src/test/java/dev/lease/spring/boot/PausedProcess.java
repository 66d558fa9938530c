package dev.lease.spring.boot;

import dev.lease.core.MonotonicClock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Pauses a replica's lease keeping the way a stopped process (a GC pause, a frozen VM) would: its
 * monotonic clock stands still and its renewals do not run. Given to the replica's LeaseManager
 * through a {@link LeaseManagerBuilderCustomizer}.
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
  private boolean clockFrozen;
  private long frozenAt;
  private long offset;

  @Override
  public void customize(dev.lease.core.LeaseManager.Builder builder) {
    builder.clock(this).attemptExecutor(this);
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
    attempts.execute(renewal);
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
