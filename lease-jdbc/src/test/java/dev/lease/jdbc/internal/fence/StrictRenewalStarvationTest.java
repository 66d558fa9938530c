package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * STRICT's cost to the lease itself, on every database: its verified transactions hold the lease
 * row in share mode, and the renewal, which writes that row, must still never starve behind them.
 * The timings are derived from this machine's measured speed under the same load (see {@link
 * #renewalsUnderLoad}); the control blocks the row outright and is seen losing the lease.
 */
class StrictRenewalStarvationTest {

  // ---- renewals are not starved
  // ----------------------------------------------------------------------

  @OnEveryDatabase
  void renewalsAreNeverStarvedBySixteenThreadsOfVerifiedTransactions(TestDatabase db)
      throws Exception {
    Renewals r = renewalsUnderLoad(db, false);
    StrictFencingTest.report(
        db, "renewals under 16 threads of STRICT transactions", List.of(r.toString()));
    assertFalse(r.lost, r.toString());
    assertEquals(0, r.failed, r.toString());
    assertTrue(r.renewals >= 30, r.toString());
    assertTrue(r.transactions > 100, r.toString());
    // the deadline that matters: a gap as long as the local deadline would lose the lease
    assertTrue(
        r.maxGapMs < r.localDeadlineMs,
        "a renewal came " + r.maxGapMs + " ms after the one before: " + r);
  }

  /** Negative control: a transaction that locks the lease row exclusively is seen starving them. */
  @OnEveryDatabase
  void negativeControlABlockedRenewalIsDetected(TestDatabase db) throws Exception {
    Renewals r = renewalsUnderLoad(db, true);
    assertTrue(r.failed > 0 && (r.maxGapMs >= r.localDeadlineMs || r.lost), r.toString());
  }

  record Renewals(
      int renewals,
      int failed,
      boolean lost,
      long maxGapMs,
      int transactions,
      long probeMs,
      long attemptTimeoutMs,
      long localDeadlineMs) {}

  /**
   * The 16 threads of STRICT transactions under {@code lease}, each in a loop until stopped; the
   * first failure of a business transaction goes to {@code error} (except where the control's
   * blocked row or SQLite's single writer makes them fail by design).
   */
  private static List<Thread> load(
      Fixture f,
      TestDatabase db,
      Lease lease,
      FencedDataSource ds,
      boolean blockRow,
      AtomicBoolean stop,
      AtomicInteger transactions,
      AtomicReference<Throwable> error) {
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      Thread th =
          new Thread(
              () -> {
                try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
                  while (!stop.get()) {
                    try (Connection c = ds.getConnection()) {
                      c.setAutoCommit(false);
                      f.insert(c, StrictFencingTest.IDS.incrementAndGet(), lease.term());
                      c.commit();
                      transactions.incrementAndGet();
                    } catch (SQLException e) {
                      if (!stop.get() && !blockRow && !db.isSqlite()) {
                        error.compareAndSet(null, e);
                      }
                    }
                  }
                }
              });
      threads.add(th);
      th.start();
    }
    return threads;
  }

  /**
   * How slow this machine is under the test's load, now: the slowest of 50 reads of the database
   * clock through a manager (the same attempt machinery, pool and server as a renewal, but no lease
   * row, so no lock to wait for) while the 16 threads run STRICT transactions under a lease of
   * their own. Measured, not guessed: 16 busy threads on two cores with a load average of 12–20
   * made 500 ms renewals fail for CPU alone.
   */
  private static long probeUnderLoadMs(Fixture f, TestDatabase db, FencedDataSource ds)
      throws Exception {
    LeaseTimings generous =
        LeaseTimings.builder()
            .leaseDuration(Duration.ofSeconds(60))
            .localDeadline(Duration.ofSeconds(45))
            .renewInterval(Duration.ofSeconds(10))
            .attemptTimeout(Duration.ofSeconds(20))
            .build();
    try (LeaseManager m =
        LeaseManager.builder(f.pool)
            .table(f.leaseTable)
            .instance("probe")
            .timings(generous)
            .failurePolicy(dev.lease.core.FailurePolicy.logOnly())
            .createTableIfMissing()
            .build()) {
      Lease lease = m.tryClaim("probe").orElseThrow().hold();
      AtomicBoolean stop = new AtomicBoolean();
      List<Thread> threads =
          load(f, db, lease, ds, false, stop, new AtomicInteger(), new AtomicReference<>());
      long slowest = 0;
      try {
        for (int i = 0; i < 50; i++) {
          long t0 = System.nanoTime();
          m.databaseTimeMillis();
          slowest = Math.max(slowest, System.nanoTime() - t0);
        }
      } finally {
        stop.set(true);
        for (Thread th : threads) {
          th.join(30_000);
        }
        lease.release();
      }
      return Math.max(1, slowest / 1_000_000);
    }
  }

  private Renewals renewalsUnderLoad(TestDatabase db, boolean blockRow) throws Exception {
    // Starvation is a renewal that waits on the row without end; the attempt timeout only says how
    // slow one may be on this machine now. It is derived from the measured speed under the same
    // load (at least 1 s, at least 10 times the slowest probe), and the local deadline and lease
    // from it; the test and its control compare gaps with that local deadline, so a slow machine
    // passes the test and a blocked row still fails it.
    try (Fixture f = new Fixture(db, 20)) {
      FencedDataSource ds = f.fenced(f.options().build());
      long probeMs = probeUnderLoadMs(f, db, ds);
      long attemptMs = Math.min(20_000, Math.max(1000, 10 * probeMs));
      LeaseTimings timings =
          LeaseTimings.builder()
              .leaseDuration(Duration.ofMillis(2 * attemptMs))
              .localDeadline(Duration.ofMillis(3 * attemptMs / 2))
              .renewInterval(Duration.ofMillis(100))
              .attemptTimeout(Duration.ofMillis(attemptMs))
              .build();
      long localDeadlineMs = timings.localDeadline().toMillis();
      List<Long> renewedAt = new ArrayList<>();
      AtomicInteger failed = new AtomicInteger();
      AtomicBoolean lost = new AtomicBoolean();
      dev.lease.core.LeaseListener watch =
          new dev.lease.core.LeaseListener() {
            @Override
            public void renewed(Lease lease) {
              synchronized (renewedAt) {
                renewedAt.add(System.nanoTime());
              }
            }

            @Override
            public void renewalFailed(Lease lease, Exception cause) {
              failed.incrementAndGet();
            }

            @Override
            public void lost(Lease lease, dev.lease.core.LossReason reason) {
              lost.set(true);
            }
          };
      LeaseManager m =
          f.closeLater(
              LeaseManager.builder(f.pool)
                  .table(f.leaseTable)
                  .instance("busy")
                  .timings(timings)
                  .listener(watch)
                  .failurePolicy(dev.lease.core.FailurePolicy.logOnly())
                  .createTableIfMissing()
                  .build());
      Lease lease = m.tryClaim("busy").orElseThrow().hold();
      long start = System.nanoTime();
      synchronized (renewedAt) {
        renewedAt.add(start);
      }
      AtomicBoolean stop = new AtomicBoolean();
      AtomicInteger transactions = new AtomicInteger();
      AtomicReference<Throwable> error = new AtomicReference<>();
      List<Thread> threads = load(f, db, lease, ds, blockRow, stop, transactions, error);
      Connection blocker = null;
      if (blockRow) {
        blocker = f.pool.getConnection();
        blocker.setAutoCommit(false);
        try (Statement s = blocker.createStatement()) {
          s.execute(
              db.isSqlite()
                  ? "UPDATE " + f.leaseTable + " SET revision = revision"
                  : "SELECT term FROM " + f.leaseTable + " WHERE name = 'busy' FOR UPDATE");
        }
        // the control's window starts once the row is locked: on SQLite the blocker's UPDATE can
        // wait seconds for the write lock among 16 writers, and the renewals made meanwhile were
        // not blocked by it
        start = System.nanoTime();
        synchronized (renewedAt) {
          renewedAt.clear();
          renewedAt.add(start);
        }
        failed.set(0);
      }
      // the control waits until the lease is lost (its renewals wait on the row), bounded by two
      // local deadlines; the test until 31 renewals, bounded by 31 attempt timeouts
      long deadline =
          start
              + TimeUnit.MILLISECONDS.toNanos(
                  blockRow ? 2 * localDeadlineMs : Math.max(15_000, 31 * attemptMs));
      while (System.nanoTime() - deadline < 0 && !lost.get()) {
        synchronized (renewedAt) {
          if (!blockRow && renewedAt.size() > 31) {
            break;
          }
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      }
      if (blocker != null) {
        blocker.rollback();
        blocker.close();
      }
      stop.set(true);
      for (Thread th : threads) {
        th.join(10_000);
      }
      lease.release();
      if (error.get() != null) {
        throw new AssertionError("a business transaction failed", error.get());
      }
      long maxGap = 0;
      synchronized (renewedAt) {
        for (int i = 1; i < renewedAt.size(); i++) {
          maxGap = Math.max(maxGap, renewedAt.get(i) - renewedAt.get(i - 1));
        }
        long sinceLast = System.nanoTime() - renewedAt.get(renewedAt.size() - 1);
        if (blockRow) {
          maxGap = Math.max(maxGap, sinceLast);
        }
        return new Renewals(
            renewedAt.size() - 1,
            failed.get(),
            lost.get(),
            maxGap / 1_000_000,
            transactions.get(),
            probeMs,
            attemptMs,
            localDeadlineMs);
      }
    }
  }
}
