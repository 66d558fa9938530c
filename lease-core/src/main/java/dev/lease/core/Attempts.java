package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LifecycleRules;
import dev.lease.core.internal.MonotonicClock;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The attempts of a {@link LeaseManager}: lease SQL bounded as a whole by the attempt timeout, the
 * connection borrow included, on the calling thread or on the attempt executor, and the translation
 * of what went wrong into a {@link LeaseException} that says what to do.
 */
final class Attempts {

  // the manager's logger: operators filter on it, whichever class of the manager logs
  private static final Logger log = LoggerFactory.getLogger(LeaseManager.class);

  private final DataSource dataSource;
  private final Dialect dialect;
  private final String table;
  private final LeaseTimings timings;
  private final LifecycleRules rules;

  /**
   * What an attempt's timeout is measured by: {@link System#nanoTime()}, or a simulation's virtual
   * clock ({@link dev.lease.core.internal.LeaseInternals#attemptClock}), where a statement takes no
   * time and a real-time stall of the simulating JVM (a loaded machine) must not time an attempt
   * out. With a virtual clock the borrow is not interrupted by the real-time {@link BorrowWatchdog}
   * either.
   */
  private final MonotonicClock attemptClock;

  private final Executor attemptExecutor;
  private final boolean ownsAttemptExecutor;

  Attempts(
      DataSource dataSource,
      Dialect dialect,
      String table,
      LeaseTimings timings,
      LifecycleRules rules,
      MonotonicClock attemptClock,
      Executor attemptExecutor,
      boolean ownsAttemptExecutor) {
    this.dataSource = dataSource;
    this.dialect = dialect;
    this.table = table;
    this.timings = timings;
    this.rules = rules;
    this.attemptClock = attemptClock;
    this.attemptExecutor = attemptExecutor;
    this.ownsAttemptExecutor = ownsAttemptExecutor;
  }

  /**
   * Runs lease SQL on a connection of its own and waits for it at most the attempt timeout, the
   * connection borrow included: a stalled pool or server cannot hold the caller longer. The attempt
   * runs on the attempt executor; its statements are also bounded in the database and on the
   * network by what is left of the attempt timeout.
   */
  <T> T execute(String what, Dialect.SqlCall<T> call) {
    return execute(what, call, null);
  }

  /**
   * Like {@link #execute(String, Dialect.SqlCall)}; {@code late} gets the result of an attempt that
   * completed after the caller gave up on it.
   */
  <T> T execute(String what, Dialect.SqlCall<T> call, Consumer<T> late) {
    return run(what, (c, timeoutMs) -> call.call(c), false, late);
  }

  /**
   * A lease step (claim, renew, release, verify): one statement that carries its own bounds ({@link
   * Dialect#inStep}), bounded as a whole like {@link #execute(String, Dialect.SqlCall)}.
   */
  <T> T executeStep(String what, Dialect.StepCall<T> call, Consumer<T> late) {
    return run(what, call, true, late);
  }

  private <T> T run(String what, Dialect.StepCall<T> call, boolean step, Consumer<T> late) {
    if (!rules.boundsAttempts()) {
      return attempt(what, call, step, -1, null, null); // weakened: the borrow has no bound
    }
    if (ownsAttemptExecutor) {
      return runHere(what, call, step, late);
    }
    // an attempt executor given through the test hook is where every attempt runs (a paused
    // process's seam), so the hand-off stays
    CompletableFuture<T> f = submit(what, call, step, late);
    long budget = timings.attemptTimeout().toNanos();
    long deadline = System.nanoTime() + budget;
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true; // the wait is bounded anyway; the flag is put back afterwards
        } catch (TimeoutException e) {
          f.completeExceptionally(timedOut(what));
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          if (cause instanceof RuntimeException r) {
            throw r;
          }
          if (cause instanceof Error err) {
            throw err;
          }
          throw new LeaseException("could not " + what + ": " + cause, cause);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Runs an attempt on the calling thread. Handing it to an attempt thread and waiting for the
   * answer cost about as much as the claim statement itself (issue 24: a claim+release cycle spent
   * about 1 ms outside the database). The bounds stay those of the hand-off: the borrow is
   * interrupted at the deadline ({@link BorrowWatchdog}); the statements carry the rest of the
   * attempt timeout as their network timeout and lock or busy timeout; a result that comes after
   * the deadline is a timeout for the caller and goes to {@code late}, as it did when the caller
   * stopped waiting. An interrupt of the caller is deferred until the attempt ends, as the
   * hand-off's bounded wait deferred it: a release from a thread that loss handling interrupted
   * still runs.
   */
  private <T> T runHere(String what, Dialect.StepCall<T> call, boolean step, Consumer<T> late) {
    long deadline = attemptClock.nanoTime() + timings.attemptTimeout().toNanos();
    boolean[] interrupted = {Thread.interrupted()}; // a pool refuses an interrupted borrower
    try {
      T result = attempt(what, call, step, deadline, null, interrupted);
      if (attemptClock.nanoTime() - deadline > 0) {
        if (late != null) {
          late.accept(result);
        }
        throw timedOut(what);
      }
      return result;
    } finally {
      if (interrupted[0]) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Borrows a connection on the calling thread, interrupted at {@code deadlineNanos}. An interrupt
   * from elsewhere ends the pool's wait too: it is noted in {@code interrupted} and the borrow
   * tried again until the deadline.
   */
  private Connection borrowHere(String what, long deadlineNanos, boolean[] interrupted)
      throws SQLException {
    if (attemptClock != MonotonicClock.SYSTEM) {
      return dataSource.getConnection(); // virtual time: a simulation's pool never waits
    }
    while (true) {
      BorrowWatchdog.Guard guard = BorrowWatchdog.guard(deadlineNanos);
      Connection c;
      try {
        c = dataSource.getConnection();
      } catch (SQLException | RuntimeException e) {
        if (!guard.end()) {
          LeaseException timeout = timedOut(what);
          timeout.addSuppressed(e);
          throw timeout;
        }
        if (Thread.interrupted()) {
          interrupted[0] = true;
          if (System.nanoTime() - deadlineNanos < 0) {
            continue;
          }
          throw timedOut(what);
        }
        throw e;
      }
      if (!guard.end()) {
        closeQuietly(c);
        throw timedOut(what);
      }
      return c;
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException | RuntimeException e) {
      log.debug("could not give back a connection borrowed after the attempt timeout", e);
    }
  }

  /**
   * Starts a one-statement step ({@link #executeStep}) on the attempt executor (on the calling
   * thread if the executor refuses it, as after {@link LeaseManager#close()}); the future completes
   * with its result or its {@link LeaseException}. Completing the future first (a timeout) abandons
   * the attempt: {@code late} then gets its result, if it has one.
   */
  <T> CompletableFuture<T> submitStep(String what, Dialect.StepCall<T> call, Consumer<T> late) {
    return submit(what, call, true, late);
  }

  private <T> CompletableFuture<T> submit(
      String what, Dialect.StepCall<T> call, boolean step, Consumer<T> late) {
    long deadline = attemptClock.nanoTime() + timings.attemptTimeout().toNanos();
    CompletableFuture<T> f = new CompletableFuture<>();
    Runnable task =
        () -> {
          if (f.isDone()) {
            return; // abandoned before it started
          }
          try {
            T result = attempt(what, call, step, deadline, f, null);
            if (!f.complete(result) && late != null) {
              late.accept(result);
            }
          } catch (Throwable t) {
            f.completeExceptionally(t);
          }
        };
    try {
      attemptExecutor.execute(task);
    } catch (RejectedExecutionException e) {
      task.run();
    }
    return f;
  }

  /** Abandons an attempt that ran out of time, completing it on an attempt thread. */
  void expire(CompletableFuture<?> attempt, String what) {
    if (attempt.isDone()) {
      return;
    }
    LeaseException timeout = timedOut(what);
    try {
      attemptExecutor.execute(() -> attempt.completeExceptionally(timeout));
    } catch (RejectedExecutionException e) {
      attempt.completeExceptionally(timeout);
    }
  }

  static Throwable unwrap(Throwable t) {
    return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
  }

  /** An attempt that ran out of its attempt timeout ({@link RenewalOutcome#TIMEOUT}). */
  static final class AttemptTimedOut extends LeaseException {
    private static final long serialVersionUID = 1L;

    AttemptTimedOut(String message) {
      super(message);
    }
  }

  private LeaseException timedOut(String what) {
    return new AttemptTimedOut(
        "could not "
            + what
            + " in lease table "
            + table
            + " on "
            + dialect.product()
            + " within the attempt timeout of "
            + timings.attemptTimeout().toMillis()
            + " ms (borrowing the connection included); the database or the pool is too slow or"
            + " exhausted: give the LeaseManager a small pool of its own");
  }

  /**
   * One attempt on a connection of its own. {@code deadlineNanos} (System.nanoTime) bounds what is
   * left for the statements after the borrow; -1: the attempt timeout counts from after the borrow
   * (the negative control of an unbounded borrow). {@code here}: on the caller's thread ({@link
   * #runHere}), which the borrow then notes a deferred interrupt in.
   */
  private <T> T attempt(
      String what,
      Dialect.StepCall<T> call,
      boolean step,
      long deadlineNanos,
      CompletableFuture<?> abandoned,
      boolean[] here) {
    try (Connection c =
        here != null ? borrowHere(what, deadlineNanos, here) : dataSource.getConnection()) {
      long timeoutMs =
          deadlineNanos == -1
              ? timings.attemptTimeout().toMillis()
              : (deadlineNanos - attemptClock.nanoTime()) / 1_000_000;
      if (timeoutMs <= 0 || (abandoned != null && abandoned.isDone())) {
        throw timedOut(what);
      }
      // The connection is the application's (pooled): its network timeout is put back afterwards,
      // since not every pool resets it (PooledSessionTest). Set on the calling thread: MySQL
      // Connector/J applies it on the given executor, so an asynchronous one would let the
      // statement start unbounded and the restore overtake the set.
      int savedNetworkTimeout = -1;
      try {
        savedNetworkTimeout = c.getNetworkTimeout();
        c.setNetworkTimeout(Runnable::run, (int) Math.min(Integer.MAX_VALUE, timeoutMs));
      } catch (SQLFeatureNotSupportedException | AbstractMethodError e) {
        // SQLite has no network; the busy timeout bounds it instead
      }
      try {
        if (step && rules.stepsAsOneStatement()) {
          // the statement's own bound (lock wait, busy timeout) ends a little before the caller
          // stops waiting: a claim that waited for a lock then fails in the database instead of
          // going through just after its caller gave up (it would be released at once, but its
          // term would be spent: StrictFencingTest on SQLite)
          long margin = Math.min(timeoutMs / 5, 250);
          return dialect.inStep(c, Math.max(1, timeoutMs - margin), call);
        }
        long bound = timeoutMs;
        return dialect.inLeaseSession(c, timeoutMs, conn -> call.call(conn, bound));
      } finally {
        if (savedNetworkTimeout >= 0) {
          restoreNetworkTimeout(c, savedNetworkTimeout);
        }
      }
    } catch (SQLException e) {
      throw translate(what, e);
    }
  }

  /** Best effort: a connection the attempt broke is discarded by its pool anyway. */
  private static void restoreNetworkTimeout(Connection c, int timeoutMs) {
    try {
      if (!c.isClosed()) {
        c.setNetworkTimeout(Runnable::run, timeoutMs);
      }
    } catch (SQLException e) {
      log.debug("could not restore the network timeout of a lease connection", e);
    }
  }

  private LeaseException translate(String what, SQLException e) {
    if (dialect.isMissingTable(e)) {
      return new LeaseException(LeaseTable.missingTable(dialect), e);
    }
    return new LeaseException(
        "could not "
            + what
            + " in lease table "
            + table
            + " on "
            + dialect.product()
            + ": "
            + e.getMessage(),
        e);
  }
}
