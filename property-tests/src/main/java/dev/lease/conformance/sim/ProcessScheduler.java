package dev.lease.conformance.sim;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The keeper's timers of one simulated process, on the simulation's event loop: a delay is measured
 * on the process's own clock, as a real {@code ScheduledThreadPoolExecutor} measures it with {@code
 * System.nanoTime}, so a slow clock makes its timers fire late in true time.
 */
final class ProcessScheduler extends AbstractExecutorService implements ScheduledExecutorService {

  private final EventLoop loop;
  private final SimProcess process;

  ProcessScheduler(EventLoop loop, SimProcess process) {
    this.loop = loop;
    this.process = process;
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    return loop.schedule(process, process.clock.toTrue(unit.toNanos(delay)), command);
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException("the simulation schedules Runnables only");
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(Runnable c, long i, long p, TimeUnit u) {
    throw new UnsupportedOperationException("the lease keeper does not use fixed-rate timers");
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(Runnable c, long i, long d, TimeUnit u) {
    throw new UnsupportedOperationException("the lease keeper does not use fixed-delay timers");
  }

  @Override
  public void execute(Runnable command) {
    loop.schedule(process, 0, command);
  }

  @Override
  public void shutdown() {}

  @Override
  public List<Runnable> shutdownNow() {
    return List.of();
  }

  @Override
  public boolean isShutdown() {
    return false;
  }

  @Override
  public boolean isTerminated() {
    return false;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return true;
  }

  @Override
  public <T> List<java.util.concurrent.Future<T>> invokeAll(
      Collection<? extends Callable<T>> tasks) {
    throw new UnsupportedOperationException();
  }
}
