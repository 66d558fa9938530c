package dev.lease.conformance.fault;

import dev.lease.conformance.Mutations;
import dev.lease.core.internal.DataSourceAdapter;
import dev.lease.core.internal.MonotonicClock;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * One process of a fault run as the operating system sees it: its monotonic clock, its keeper's
 * timer and renewal threads, its worker, and its connections. {@link #freeze} stops all of them at
 * once, as a stop-the-world GC pause or {@code SIGSTOP} does: every thread of the process blocks at
 * its next step (a clock read, a timer or renewal task starting, a JDBC call, or the reply to one)
 * until the freeze ends, while {@code System.nanoTime} moves on, so afterwards the process sees the
 * time that passed. A statement already at the server runs there; its reply waits. Nothing in the
 * process can give the lease up during the freeze, so what stops a stale commit is the database:
 * STRICT's lock and the server's idle-transaction timeout.
 *
 * <p>Its connections also carry the run's {@link Mutations} (negative controls), applied to the SQL
 * and calls of lease-core and lease-jdbc as they reach the driver.
 */
final class FreezableProcess implements AutoCloseable {

  private static final Set<Class<?>> WRAPPED =
      Set.of(
          Connection.class,
          Statement.class,
          PreparedStatement.class,
          CallableStatement.class,
          ResultSet.class,
          DatabaseMetaData.class);

  private final String name;
  private final Mutations mutations;
  private final Timers timers;
  private final ExecutorService attempts;
  private final ExecutorService losses;
  private volatile long frozenUntil = System.nanoTime();
  private volatile long freezeAtCommitMillis;

  /** When this thread's last commit() left the process for the database (after any freeze). */
  private final ThreadLocal<long[]> commitSent = ThreadLocal.withInitial(() -> new long[1]);

  FreezableProcess(String name, Mutations mutations) {
    this.name = name;
    this.mutations = mutations;
    AtomicInteger n = new AtomicInteger();
    this.timers = new Timers(name, this);
    this.attempts =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, name + "-attempt-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    this.losses =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, name + "-loss-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Stops the whole process for {@code millis} from now; the calling thread stops at its next step.
   */
  void freeze(long millis) {
    frozenUntil = System.nanoTime() + millis * 1_000_000L;
  }

  /**
   * Freezes the process for {@code millis} when its next {@code commit()} reaches the driver: after
   * lease-jdbc's checks, before the commit is sent. A stop there is what VERIFY cannot survive.
   */
  void freezeAtNextCommit(long millis) {
    freezeAtCommitMillis = millis;
  }

  /**
   * When the calling thread's last {@code commit()} was sent to the database, 0 if none since the
   * last call: later than when the application called it if the process froze in between.
   */
  long takeCommitSent() {
    long[] sent = commitSent.get();
    long t = sent[0];
    sent[0] = 0;
    return t;
  }

  /** Blocks the calling thread of this process while it is frozen. */
  void gate() {
    long left;
    while ((left = frozenUntil - System.nanoTime()) > 0) {
      LockSupport.parkNanos(left);
    }
  }

  /** The process's monotonic clock: a thread that reads it during a freeze stops there. */
  MonotonicClock clock() {
    return () -> {
      gate();
      return System.nanoTime();
    };
  }

  /** The keeper's timers: a task due during a freeze starts when it ends. */
  ScheduledExecutorService scheduler() {
    return timers;
  }

  /** The lease statements' attempts: one started during a freeze waits for its end. */
  ExecutorService attemptExecutor() {
    return gated(attempts);
  }

  /** Loss handling (listeners, onLoss callbacks, the grace period): frozen with the process. */
  ExecutorService lossExecutor() {
    return gated(losses);
  }

  private ExecutorService gated(ExecutorService pool) {
    return new java.util.concurrent.AbstractExecutorService() {
      @Override
      public void execute(Runnable r) {
        pool.execute(
            () -> {
              gate();
              r.run();
            });
      }

      @Override
      public void shutdown() {
        pool.shutdown();
      }

      @Override
      public List<Runnable> shutdownNow() {
        return pool.shutdownNow();
      }

      @Override
      public boolean isShutdown() {
        return pool.isShutdown();
      }

      @Override
      public boolean isTerminated() {
        return pool.isTerminated();
      }

      @Override
      public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        return pool.awaitTermination(timeout, unit);
      }
    };
  }

  /**
   * The process's way to the database: every connection, statement and result set frozen with it.
   *
   * @param application the application's connections (which lease-jdbc fences), as opposed to
   *     lease-core's own: {@link dev.lease.conformance.Mutation#AUTOCOMMIT_STAYS_ON} breaks only
   *     those
   */
  DataSource dataSource(DataSource raw, boolean application) {
    return new DataSourceAdapter() {
      @Override
      public Connection getConnection() throws SQLException {
        gate();
        Connection c = raw.getConnection();
        gate();
        return (Connection) wrap(c, Connection.class, application, false);
      }

      @Override
      public String toString() {
        return name + " -> " + raw;
      }
    };
  }

  /**
   * A text that ends with COMMIT: lease-jdbc's commit on PostgreSQL sends {@code <proof>;COMMIT} as
   * one prepared statement, so the commit reaches the database when that statement executes, not at
   * the driver's {@code commit()} (which then finds nothing open to commit).
   */
  private static final java.util.regex.Pattern COMMITS =
      java.util.regex.Pattern.compile("(?is).*;\\s*COMMIT\\s*;?\\s*");

  /**
   * @param commits a statement whose text ends with COMMIT: its execution is the commit leaving the
   *     process (where a freeze at commit stops it, and when the commit was sent)
   */
  private Object wrap(Object target, Class<?> iface, boolean application, boolean commits) {
    // lease-core's connections never lose their setAutoCommit(false)
    boolean[] applicationTransactionStarted = {!application};
    return Proxy.newProxyInstance(
        iface.getClassLoader(),
        new Class<?>[] {iface},
        (proxy, m, args) ->
            call(proxy, target, iface, m, args, applicationTransactionStarted, commits));
  }

  private Object call(
      Object proxy,
      Object target,
      Class<?> iface,
      Method m,
      Object[] args,
      boolean[] applicationTransactionStarted,
      boolean commits)
      throws Throwable {
    String method = m.getName();
    switch (method) {
      case "equals":
        return proxy == args[0];
      case "hashCode":
        return System.identityHashCode(proxy);
      case "toString":
        return name + ":" + target;
      case "unwrap":
      case "isWrapperFor":
        return invoke(target, m, args);
      default:
        break;
    }
    if (iface == Connection.class) {
      // the application's own setAutoCommit(false), the first on the connection (lease-jdbc's
      // wrapper of autocommit statements makes its own later)
      if (method.equals("setAutoCommit")
          && Boolean.FALSE.equals(args[0])
          && !applicationTransactionStarted[0]) {
        applicationTransactionStarted[0] = true;
        if (mutations.dropsAutoCommitOff()) {
          return null;
        }
      }
    }
    boolean commitCall =
        (iface == Connection.class && method.equals("commit"))
            || (commits && method.startsWith("execute"));
    if (commitCall && freezeAtCommitMillis > 0) {
      freeze(freezeAtCommitMillis);
      freezeAtCommitMillis = 0;
    }
    if (args != null
        && args.length > 0
        && args[0] instanceof String sql
        && iface != ResultSet.class
        && (method.startsWith("prepare")
            || method.startsWith("execute")
            || method.equals("addBatch"))) {
      args[0] = mutations.sql(sql);
    }
    gate();
    if (commitCall && commitSent.get()[0] == 0) {
      // the first wins: after a {@code <proof>;COMMIT} text, the driver's commit() sends nothing
      commitSent.get()[0] = System.nanoTime();
    }
    Object result;
    try {
      result = invoke(target, m, args);
    } finally {
      gate(); // the reply (or the error) reaches a frozen process only when it runs again
    }
    Class<?> type = m.getReturnType();
    if (result != null && WRAPPED.contains(type)) {
      boolean commitText =
          iface == Connection.class
              && method.startsWith("prepare")
              && args != null
              && args.length > 0
              && args[0] instanceof String sql
              && COMMITS.matcher(sql).matches();
      return wrap(result, type, false, commitText);
    }
    return result;
  }

  private static Object invoke(Object target, Method m, Object[] args) throws Throwable {
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Override
  public void close() {
    frozenUntil = System.nanoTime();
    timers.shutdownNow();
    attempts.shutdownNow();
    losses.shutdownNow();
  }

  /** Timers whose tasks start only while the process runs. */
  private static final class Timers extends ScheduledThreadPoolExecutor {
    private final FreezableProcess process;

    Timers(String name, FreezableProcess process) {
      super(
          2,
          r -> {
            Thread t = new Thread(r, name + "-keeper");
            t.setDaemon(true);
            return t;
          });
      this.process = process;
      setRemoveOnCancelPolicy(true);
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
      return super.schedule(
          () -> {
            process.gate();
            command.run();
          },
          delay,
          unit);
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
      return super.schedule(
          () -> {
            process.gate();
            return callable.call();
          },
          delay,
          unit);
    }
  }
}
