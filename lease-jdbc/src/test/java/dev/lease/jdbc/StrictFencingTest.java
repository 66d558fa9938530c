package dev.lease.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.MonotonicClock;
import dev.lease.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * STRICT's guarantee on every database: no transaction verified under term t commits after the
 * claim of term t+1 commits. The holder's lease manager runs on a frozen process clock, so the
 * holder never gives its lease up by itself (the worst case: a paused process that still believes
 * it holds the lease); only the database can stop it.
 */
class StrictFencingTest {

  /** Short protocol timings: the lease expires (database clock) one second after the claim. */
  static final LeaseTimings SHORT =
      LeaseTimings.builder()
          .leaseDuration(Duration.ofMillis(1000))
          .localDeadline(Duration.ofMillis(800))
          .renewInterval(Duration.ofMillis(200))
          .attemptTimeout(Duration.ofMillis(400))
          .build();

  static final MonotonicClock FROZEN = () -> 0L;

  enum Pause {
    BEFORE_FIRST_STATEMENT,
    AFTER_VERIFIED_READ,
    AFTER_WRITE,
    BEFORE_COMMIT
  }

  /** What one paused-holder run saw. */
  record Run(
      Pause pause,
      long releaseAfterExpiryMs,
      String holderOutcome,
      boolean claimedDuringPause,
      long term,
      int rowsCommitted,
      long successorTerm) {

    /**
     * The successor claimed term + 1. Otherwise a claim attempt of term + 1 outlived its timeout on
     * a busy machine, committed, and was given back: its commit time is unknown here, so the
     * history cannot order the holder's commit against it, and the run proves nothing.
     */
    boolean conclusive() {
      return successorTerm == term + 1;
    }
  }

  /**
   * {@link #pausedHolder}, run again (up to three times) while a run is inconclusive; fails if none
   * is conclusive. An inconclusive run's history stays: anything it reports is a real violation.
   */
  private Run conclusivePausedHolder(
      Fixture f,
      DataSource ds,
      Pause pause,
      long releaseAfterExpiryMs,
      CommitHistory history,
      String note)
      throws Exception {
    Run run = null;
    for (int attempt = 1; attempt <= 3; attempt++) {
      run = pausedHolder(f, ds, pause, releaseAfterExpiryMs, history, note);
      if (run.conclusive()) {
        return run;
      }
      System.out.println("inconclusive paused-holder run (retried): " + run);
    }
    throw new AssertionError("three paused-holder runs in a row were inconclusive: " + run);
  }

  private static final AtomicInteger IDS = new AtomicInteger();

  // ---- a verified transaction makes the next claim wait
  // -------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void theClaimOfTheNextTermWaitsForATransactionVerifiedUnderTheLast(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 6)) {
      CommitHistory h = new CommitHistory();
      FencedDataSource ds =
          f.fenced(f.options().idleInTransactionTimeout(Duration.ofSeconds(20)).build());
      Run run = conclusivePausedHolder(f, ds, Pause.AFTER_WRITE, 1500, h, "waits");
      assertFalse(
          run.claimedDuringPause(), "the claim must wait for the verified transaction: " + run);
      assertEquals("committed", run.holderOutcome(), run.toString());
      assertEquals(List.of(), h.violations(), h.toString());
    }
  }

  /** Negative control: a plain verify takes no lock, so the claim goes through at once. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#servers")
  void negativeControlInVerifyModeTheClaimDoesNotWait(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 6)) {
      CommitHistory h = new CommitHistory();
      FencedDataSource ds = f.fenced(f.options().mode(FencingMode.VERIFY).build());
      Run run = pausedHolder(f, ds, Pause.AFTER_WRITE, 3000, h, "verify-mode");
      assertTrue(run.claimedDuringPause(), run.toString());
    }
  }

  // ---- paused holders, recorded and checked
  // ------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void aPausedHolderCommitsBeforeTheSuccessorsClaimOrIsRefusedNeverAfter(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 6)) {
      CommitHistory h = new CommitHistory();
      List<Run> runs = new ArrayList<>();
      for (Pause pause : Pause.values()) {
        // a short pause the holder survives, and a long one past the idle-in-transaction timeout
        // (PostgreSQL, MariaDB: the server ends the paused session, the claim goes through)
        for (long releaseAfter : new long[] {150, 1600}) {
          Duration idle = releaseAfter < 1000 ? Duration.ofSeconds(20) : Duration.ofSeconds(1);
          FencedDataSource ds = f.fenced(f.options().idleInTransactionTimeout(idle).build());
          runs.add(
              conclusivePausedHolder(f, ds, pause, releaseAfter, h, pause + "/" + releaseAfter));
        }
      }
      report(db, "paused-holder runs (STRICT)", runs);
      assertEquals(List.of(), h.violations(), h + "\n" + runs);
      for (Run r : runs) {
        assertEquals(
            r.holderOutcome().equals("committed") ? 2 : 0,
            r.rowsCommitted(),
            "a transaction commits whole or not at all: " + r);
      }
    }
  }

  /**
   * Negative control: the same scenario with the fence weakened must produce the stale commit, and
   * the checker must report it. On the servers the weakening is VERIFY mode; on SQLite VERIFY is
   * the same statement as STRICT (SQLite has no row locks and its single writer does the fencing),
   * so the weakened holder there does not verify at all.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void negativeControlAWeakenedFenceLetsAPausedHolderCommitAfterTakeover(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 6)) {
      CommitHistory h = new CommitHistory();
      DataSource ds =
          db.isSqlite()
              ? f.pool
              : f.fenced(
                  WeakenedFence.weaken(
                          f.options().mode(FencingMode.VERIFY), WeakenedFence.PREVIOUS_REFUSAL)
                      .build());
      Pause pause = db.isSqlite() ? Pause.BEFORE_FIRST_STATEMENT : Pause.AFTER_WRITE;
      Run run = pausedHolder(f, ds, pause, 3000, h, "weakened");
      assertEquals("committed", run.holderOutcome(), run.toString());
      assertEquals(1, h.violations().size(), "the checker must report the stale commit: " + h);
    }
  }

  // ---- takeover is bounded by the server's own timeouts
  // --------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void aPausedHolderCannotDelayTakeoverBeyondTheServersTimeouts(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 6)) {
      Duration idle = Duration.ofSeconds(1);
      FencedDataSource ds = f.fenced(f.options().idleInTransactionTimeout(idle).build());
      if (db.isSqlite()) {
        // no server: a STRICT holder holds SQLite's write lock from its verify on, so a paused one
        // delays the claim until it resumes (or its process dies) ...
        long strict = takeoverDelay(f, ds, Pause.AFTER_VERIFIED_READ, 2500, 0);
        // ... while a VERIFY holder paused after reading does not delay it at all (WAL); its next
        // write fails instead
        long plain =
            takeoverDelay(
                f,
                f.fenced(f.options().mode(FencingMode.VERIFY).build()),
                Pause.AFTER_VERIFIED_READ,
                5000,
                0);
        report(
            db,
            "takeover delay beyond expiry",
            List.of(
                "STRICT, paused after its verify: "
                    + (strict < 0 ? "no takeover while paused (2.5 s observed)" : strict + " ms"),
                "VERIFY, paused after a verified read: " + plain + " ms"));
        assertTrue(strict < 0, "SQLite cannot end a paused holder's write transaction: " + strict);
        assertTrue(plain >= 0 && plain < 1500, "VERIFY, after a read: " + plain);
        return;
      }
      long delay = takeoverDelay(f, ds, Pause.AFTER_WRITE, 10_000, 700);
      report(
          db,
          "takeover delay beyond expiry (idle-in-transaction timeout 1 s, holder paused"
              + " after a write about 300 ms before expiry)",
          List.of(delay + " ms"));
      assertTrue(delay >= 0, "the paused holder blocked the takeover for 10 s");
      assertTrue(delay < 1000 + 2500, "takeover took " + delay + " ms after expiry");
    }
  }

  // ---- renewals are not starved
  // ----------------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void renewalsAreNeverStarvedBySixteenThreadsOfVerifiedTransactions(TestDatabase db)
      throws Exception {
    Renewals r = renewalsUnderLoad(db, false);
    report(db, "renewals under 16 threads of STRICT transactions", List.of(r.toString()));
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
  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
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
                      f.insert(c, IDS.incrementAndGet(), lease.term());
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

  // ---- the paused-holder scenario
  // -------------------------------------------------------------------

  /**
   * The holder claims, opens a transaction on {@code ds} and pauses at {@code pause} (its thread
   * held on a latch) while a successor polls for the claim. The holder resumes as soon as the claim
   * completes, or {@code releaseAfterExpiryMs} after the lease expired, whichever comes first, and
   * tries to commit. Claims and commits go into {@code history}.
   */
  private Run pausedHolder(
      Fixture f,
      DataSource ds,
      Pause pause,
      long releaseAfterExpiryMs,
      CommitHistory history,
      String note)
      throws Exception {
    LeaseManager holderManager = f.manager("holder", SHORT, FROZEN);
    LeaseManager successor = f.manager("successor", SHORT, MonotonicClock.SYSTEM);
    String name = "p" + IDS.incrementAndGet();
    Lease lease = holderManager.tryClaim(name).orElseThrow();
    long expiry = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1000);
    int id1 = IDS.incrementAndGet();
    int id2 = IDS.incrementAndGet();
    CountDownLatch paused = new CountDownLatch(1);
    CountDownLatch resume = new CountDownLatch(1);
    CountDownLatch claimDone = new CountDownLatch(1);
    AtomicReference<String> outcome = new AtomicReference<>("not run");
    Runnable pauseHere =
        () -> {
          paused.countDown();
          try {
            resume.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        };
    Thread holder =
        new Thread(
            () -> {
              try (LeaseContext.Scope scope = LeaseContext.bind(lease);
                  Connection c = ds.getConnection()) {
                c.setAutoCommit(false);
                try {
                  if (pause == Pause.BEFORE_FIRST_STATEMENT) {
                    pauseHere.run();
                  }
                  if (pause == Pause.AFTER_VERIFIED_READ) {
                    try (Statement s = c.createStatement();
                        ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + f.data)) {
                      rs.next();
                    }
                    pauseHere.run();
                  }
                  f.insert(c, id1, lease.term());
                  if (pause == Pause.AFTER_WRITE) {
                    pauseHere.run();
                  }
                  f.insert(c, id2, lease.term());
                  if (pause == Pause.BEFORE_COMMIT) {
                    pauseHere.run();
                  }
                } catch (SQLException e) {
                  outcome.set("refused before commit: " + e.getSQLState() + " " + e.getMessage());
                  rollbackQuietly(c);
                  return;
                }
                long invoked = System.nanoTime();
                try {
                  c.commit();
                  history.commit(name, lease.term(), invoked, true, note);
                  outcome.set("committed");
                } catch (SQLException e) {
                  history.commit(name, lease.term(), invoked, false, note);
                  outcome.set("commit failed: " + e.getSQLState() + " " + e.getMessage());
                  rollbackQuietly(c);
                }
              } catch (SQLException e) {
                outcome.set("connection failed: " + e.getMessage());
              } finally {
                paused.countDown();
              }
            },
            "paused-holder");
    AtomicLong newTerm = new AtomicLong();
    long giveUp = expiry + TimeUnit.MILLISECONDS.toNanos(releaseAfterExpiryMs + 10_000);
    Thread claimer =
        new Thread(
            () -> {
              while (System.nanoTime() - giveUp < 0) {
                try {
                  Optional<Lease> won = successor.tryClaim(name);
                  if (won.isPresent()) {
                    history.claimed(name, won.get().term(), System.nanoTime());
                    newTerm.set(won.get().term());
                    claimDone.countDown();
                    return;
                  }
                } catch (LeaseException e) {
                  // the claim waited for a lock past its attempt timeout: try again
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(25));
              }
            },
            "successor");
    holder.start();
    assertTrue(paused.await(10, TimeUnit.SECONDS), "the holder never reached its pause");
    claimer.start();
    long releaseAt = expiry + TimeUnit.MILLISECONDS.toNanos(releaseAfterExpiryMs);
    boolean claimedDuringPause =
        claimDone.await(Math.max(0, releaseAt - System.nanoTime()), TimeUnit.NANOSECONDS);
    resume.countDown();
    holder.join(20_000);
    claimer.join(30_000);
    assertFalse(holder.isAlive() || claimer.isAlive(), "the run did not finish");
    // a later term, not necessarily t+1: a claim attempt that outlived its timeout on a busy
    // machine may still have committed, and its claim was given back (SQLite, under load); such
    // a run is inconclusive (Run.conclusive)
    assertTrue(
        newTerm.get() > lease.term(),
        "the successor claimed a later term: " + newTerm.get() + " after " + lease.term());
    int rows = f.count("id IN (" + id1 + ", " + id2 + ")");
    return new Run(
        pause,
        releaseAfterExpiryMs,
        outcome.get(),
        claimedDuringPause,
        lease.term(),
        rows,
        newTerm.get());
  }

  /**
   * How long after the lease's expiry (database clock) the successor's claim succeeded while the
   * holder stayed paused at {@code pause}, its last statement run {@code lastStatementAfterMs}
   * after the claim; -1 if the claim did not succeed within {@code waitMs} after the expiry.
   */
  private long takeoverDelay(
      Fixture f, DataSource ds, Pause pause, long waitMs, long lastStatementAfterMs)
      throws Exception {
    LeaseManager holderManager = f.manager("holder", SHORT, FROZEN);
    LeaseManager successor = f.manager("successor", SHORT, MonotonicClock.SYSTEM);
    String name = "t" + IDS.incrementAndGet();
    Lease lease = holderManager.tryClaim(name).orElseThrow();
    long expiresAtMs;
    try (Connection c = f.pool.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT expires_at_ms FROM " + f.leaseTable + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        expiresAtMs = rs.getLong(1);
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
    CountDownLatch paused = new CountDownLatch(1);
    CountDownLatch resume = new CountDownLatch(1);
    // the worst case for takeover on a server: the holder's last statement runs shortly before the
    // expiry, so the idle-in-transaction timer starts as late as it can
    long lastStatementAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(lastStatementAfterMs);
    AtomicBoolean verifiedAndPaused = new AtomicBoolean();
    Thread holder =
        new Thread(
            () -> {
              try (LeaseContext.Scope scope = LeaseContext.bind(lease);
                  Connection c = ds.getConnection()) {
                c.setAutoCommit(false);
                LockSupport.parkNanos(lastStatementAt - System.nanoTime());
                try {
                  if (pause == Pause.AFTER_VERIFIED_READ) {
                    try (Statement s = c.createStatement();
                        ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + f.data)) {
                      rs.next();
                    }
                  } else {
                    f.insert(c, IDS.incrementAndGet(), lease.term());
                  }
                  verifiedAndPaused.set(true);
                  paused.countDown();
                  resume.await();
                  c.commit();
                } catch (SQLException | InterruptedException e) {
                  rollbackQuietly(c);
                }
              } catch (SQLException e) {
                // the server ended the paused session
              } finally {
                paused.countDown();
              }
            },
            "paused-holder");
    holder.start();
    assertTrue(paused.await(10, TimeUnit.SECONDS));
    assertTrue(
        verifiedAndPaused.get(),
        "the holder's transaction was not verified before the"
            + " lease expired, so nothing was measured");
    long giveUp = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1000 + waitMs);
    long delay = -1;
    while (System.nanoTime() - giveUp < 0) {
      try {
        if (successor.tryClaim(name).isPresent()) {
          delay = successor.databaseTimeMillis() - expiresAtMs;
          break;
        }
      } catch (LeaseException e) {
        // waited past its attempt timeout
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(25));
    }
    resume.countDown();
    holder.join(20_000);
    return delay;
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException e) {
      // the session may be gone
    }
  }

  private static void report(TestDatabase db, String what, List<?> lines) {
    StringBuilder b = new StringBuilder(db + ": " + what + "\n");
    for (Object l : lines) {
      b.append("  ").append(l).append('\n');
    }
    System.out.print(b);
    try {
      Path out = Path.of("target", "fencing-measurements.txt");
      Files.createDirectories(out.getParent());
      Files.writeString(out, b.toString(), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    } catch (java.io.IOException e) {
      // the report is a convenience
    }
  }
}
