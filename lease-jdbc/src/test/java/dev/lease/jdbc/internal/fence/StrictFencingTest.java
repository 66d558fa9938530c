package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.MonotonicClock;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
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
      long successorTerm,
      boolean successorTookItFromTheHolder) {

    /**
     * The successor's claim took the name from the holder's term (the claim statement read the
     * holder's instance in the row it replaced: {@code Lease.fromAnotherInstance}). Otherwise an
     * earlier claim attempt of the successor outlived its timeout on a busy machine, committed, and
     * was given back: its commit time is unknown here, so the history cannot order the holder's
     * commit against it, and the run proves nothing.
     */
    boolean conclusive() {
      return successorTookItFromTheHolder;
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

  static final AtomicInteger IDS = new AtomicInteger();

  // ---- a verified transaction makes the next claim wait
  // -------------------------------------------

  @OnEveryDatabase
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
  @OnEveryServer
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

  @OnEveryDatabase
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
  @OnEveryDatabase
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

  @OnEveryDatabase
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
    java.util.concurrent.atomic.AtomicBoolean fromHolder =
        new java.util.concurrent.atomic.AtomicBoolean();
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
                    fromHolder.set(won.get().fromAnotherInstance());
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
        newTerm.get(),
        fromHolder.get());
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

  static void report(TestDatabase db, String what, List<?> lines) {
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
