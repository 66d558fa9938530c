package dev.lease.core;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads of a {@link LeaseManager}: the keeper's scheduler, the attempt executor, the loss
 * executor and the factory of work threads, each made here unless the builder's test hook gave one.
 */
final class ManagerThreads {

  final ScheduledExecutorService scheduler;
  final Executor attemptExecutor;
  final Executor lossExecutor;
  final ThreadFactory workThreads = daemon("lease-work-");
  // close() stops only what the manager made: a scheduler or executor given to the builder is the
  // caller's (and the attempt executor may be any Executor, not an ExecutorService)
  final boolean ownsScheduler;
  final boolean ownsAttemptExecutor;
  final boolean ownsLossExecutor;

  /** The given scheduler and executors (null: make one). */
  ManagerThreads(
      ScheduledExecutorService scheduler, Executor attemptExecutor, Executor lossExecutor) {
    this.ownsScheduler = scheduler == null;
    this.ownsAttemptExecutor = attemptExecutor == null;
    this.ownsLossExecutor = lossExecutor == null;
    this.scheduler = scheduler != null ? scheduler : defaultScheduler();
    this.attemptExecutor =
        attemptExecutor != null
            ? attemptExecutor
            : Executors.newCachedThreadPool(daemon("lease-attempt-"));
    // Loss handling has threads of its own: a slow LeaseListener.lost, onLoss callback or failure
    // policy must not hold a keeper thread, which would delay the deadline checks and renewals of
    // every other lease of this manager (ManagerLifecycleTest).
    this.lossExecutor =
        lossExecutor != null ? lossExecutor : Executors.newCachedThreadPool(daemon("lease-loss-"));
  }

  /** Stops the threads the manager made ({@link LeaseManager#close()}). */
  void shutdown() {
    if (ownsScheduler) {
      scheduler.shutdownNow();
    }
    // shutdown, not shutdownNow: the handling of a loss that came before close (its grace period
    // and failure policy) still runs, and a late release still goes out
    if (ownsAttemptExecutor) {
      ((ExecutorService) attemptExecutor).shutdown();
    }
    if (ownsLossExecutor) {
      ((ExecutorService) lossExecutor).shutdown();
    }
  }

  private static ScheduledExecutorService defaultScheduler() {
    ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(2, daemon("lease-keeper-"));
    s.setRemoveOnCancelPolicy(true);
    return s;
  }

  private static ThreadFactory daemon(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
