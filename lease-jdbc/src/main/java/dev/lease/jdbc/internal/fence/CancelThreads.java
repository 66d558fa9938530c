package dev.lease.jdbc.internal.fence;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The threads that cancel a lost lease's running statements, shared by every fenced connection: a
 * driver's cancel blocks (pgjdbc opens a socket and waits up to {@code cancelSignalTimeout}, 10 s;
 * Connector/J opens a connection), so it runs neither on the thread that reported the loss nor on
 * {@code ForkJoinPool.commonPool()}, whose parallelism is 1 on two cores and which the application
 * shares (review L1). Bounded: at most {@value #THREADS} daemon threads, idle ones end; a cancel
 * that does not fit the queue is dropped with a warning (its transaction stays poisoned).
 */
final class CancelThreads {

  static final int THREADS = 4;
  private static final int QUEUE = 10_000;
  private static final Logger log = LoggerFactory.getLogger(CancelThreads.class);
  private static final AtomicInteger COUNT = new AtomicInteger();

  static final Executor SHARED = create();

  private CancelThreads() {}

  private static Executor create() {
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            THREADS,
            THREADS,
            1, // idle threads end a second after the last cancel: none outlives its use (issue 37)
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(QUEUE),
            r -> {
              Thread t = new Thread(r, "lease-jdbc-cancel-" + COUNT.incrementAndGet());
              t.setDaemon(true);
              return t;
            },
            (r, p) ->
                log.warn(
                    "{} cancels of lost leases' statements are queued; dropped one (its"
                        + " transaction stays poisoned)",
                    QUEUE));
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }
}
