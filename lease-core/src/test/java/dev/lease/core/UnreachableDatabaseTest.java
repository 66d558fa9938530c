package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.ConnectionSource;
import dev.lease.testing.FailingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.opentest4j.AssertionFailedError;

/**
 * The database unreachable at start (a clear LeaseException) and in the middle of a hold: the
 * holder gives the lease up within its local deadline whether connections are refused, hang, or
 * wait on a row lock, and no call hangs.
 */
class UnreachableDatabaseTest {

  private static final long LOCAL_DEADLINE_MS = 500;
  private static final LeaseTimings TIMINGS =
      Fixture.timings(1_000, 100, LOCAL_DEADLINE_MS, 200, 200);

  /**
   * Scheduling slack beyond what a {@link LateTimer reference timer} due at the same instant shows
   * of this machine's load: the keeper's own timer may run a little later than the reference.
   */
  private static final long SLACK_MS = 700;

  /**
   * A timer of the test's own, due {@link #LOCAL_DEADLINE_MS} after an instant: how late this
   * machine runs timers right now (a load average of 12-20 delays them by hundreds of ms). The
   * bound on a loss adds that lateness, so it is measured against what the machine can do, while
   * the slow-clock control still gives up about 2 s after the reference fired.
   */
  static final class LateTimer {
    private final CompletableFuture<Long> latenessMs = new CompletableFuture<>();

    LateTimer(long fromNanos) {
      ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
      long due = fromNanos + TimeUnit.MILLISECONDS.toNanos(LOCAL_DEADLINE_MS);
      timer.schedule(
          () -> {
            latenessMs.complete(Math.max(0, (System.nanoTime() - due) / 1_000_000));
            timer.shutdown();
          },
          due - System.nanoTime(),
          TimeUnit.NANOSECONDS);
    }

    long latenessMs() {
      return latenessMs.orTimeout(30, TimeUnit.SECONDS).join();
    }
  }

  @OnEveryDatabase
  void unreachableAtStartFailsWithAClearError(TestDatabase db) {
    DataSource closed =
        switch (db) {
          case POSTGRESQL ->
              new UrlDataSource(
                  "jdbc:postgresql://127.0.0.1:1/test?user=postgres" + "&connectTimeout=5");
          case MYSQL ->
              new UrlDataSource(
                  "jdbc:mysql://127.0.0.1:1/test?user=root&password=" + "&connectTimeout=5000");
          case MARIADB ->
              new UrlDataSource(
                  "jdbc:mariadb://127.0.0.1:1/test?user=root&password=" + "&connectTimeout=5000");
          case SQLITE ->
              TestDatabase.sqliteDataSource("/nonexistent-dir-" + System.nanoTime() + "/leases.db");
        };
    LeaseException e =
        assertTimeoutPreemptively(
            Duration.ofSeconds(15),
            () ->
                assertThrows(
                    LeaseException.class,
                    () -> LeaseManager.builder(closed).instance("start").build()));
    assertTrue(e.getMessage().startsWith("cannot reach the lease database ("), e.getMessage());
    assertTrue(
        e.getMessage()
            .contains(
                "check that it is running and that the DataSource's URL,"
                    + " user and password are right"),
        e.getMessage());
    assertTrue(e.getCause() instanceof SQLException, "the driver's error is the cause");
  }

  /** Records the loss and when it came. */
  /** A manager of instance "holder" on {@code ds} whose losses {@code losses} records. */
  private static LeaseManager holder(Fixture f, DataSource ds, Losses losses) {
    return f.track(f.builder(ds, "holder").timings(TIMINGS).listener(losses).build());
  }

  static final class Losses implements LeaseListener {
    final CountDownLatch lost = new CountDownLatch(1);
    final AtomicLong lostAtNanos = new AtomicLong();
    final AtomicInteger failedRenewals = new AtomicInteger();
    volatile LossReason reason;

    @Override
    public void lost(Lease lease, LossReason why) {
      reason = why;
      lostAtNanos.set(System.nanoTime());
      lost.countDown();
    }

    @Override
    public void renewalFailed(Lease lease, Exception cause) {
      failedRenewals.incrementAndGet();
    }

    long lostAfterMs(long sinceNanos) {
      return Duration.ofNanos(lostAtNanos.get() - sinceNanos).toMillis();
    }
  }

  /**
   * Issue 41 item 5: a release whose statement cannot reach the database (a failover in progress)
   * still ends the lease here and tells the listeners, once; the statement is retried, so when the
   * database is back within the lease the row is freed then, not at its expiry.
   */
  @OnEveryDatabase
  void aReleaseThatCannotReachTheDatabaseEndsTheLeaseOnceAndFreesTheRowWhenItIsBack(
      TestDatabase db) {
    LeaseTimings timings = Fixture.timings(30_000, 100, 20_000, 200, 200);
    try (Fixture f = new Fixture(db)) {
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      java.util.concurrent.atomic.AtomicInteger released =
          new java.util.concurrent.atomic.AtomicInteger();
      LeaseManager m =
          f.track(
              f.builder(failing, "holder")
                  .timings(timings)
                  .listener(
                      new LeaseListener() {
                        @Override
                        public void released(Lease lease) {
                          released.incrementAndGet();
                        }
                      })
                  .build());
      Lease lease = claim(m, "moving").orElseThrow();
      failing.failing(true);
      assertThrows(LeaseException.class, lease::release, "the release statement failed");
      assertTrue(lease.isReleased(), "ended here all the same");
      assertEquals(1, released.get(), "the listeners heard of it once");
      failing.failing(false); // the database is back, long before the row's expiry (30 s)
      Fixture.await(
          "the retried release to free the row",
          Duration.ofSeconds(10),
          () -> f.row("moving").expiresAtMs() == 0);
      assertEquals(1, released.get(), "still once");
    }
  }

  @OnEveryDatabase
  void refusedConnectionsMidHoldEndTheLeaseWithinTheLocalDeadline(TestDatabase db)
      throws InterruptedException {
    try (Fixture f = new Fixture(db)) {
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      Losses losses = new Losses();
      LeaseManager m = holder(f, failing, losses);
      Lease lease = claim(m, "outage").orElseThrow().hold();
      assertTrue(renew(lease));
      long outage = System.nanoTime();
      LateTimer reference = new LateTimer(outage);
      failing.failing(true);
      assertTimeoutPreemptively(
          Duration.ofSeconds(5),
          () -> {
            // every call fails fast with a LeaseException while the lease winds down
            assertThrows(LeaseException.class, () -> m.tryClaim("other"));
            assertThrows(LeaseException.class, m::databaseTimeMillis);
            if (lease.isHeld()) {
              assertThrows(LeaseException.class, lease::renew, "renew while unreachable");
            }
            assertTrue(losses.lost.await(3, TimeUnit.SECONDS), "lease given up");
          });
      assertEquals(LossReason.LOCAL_DEADLINE, losses.reason);
      assertGaveUpWithinTheLocalDeadline(losses, outage, reference);
      assertTrue(losses.failedRenewals.get() >= 1);
      assertFalse(lease.isHeld());
      assertFalse(lease.renew(), "renew of a lost lease");
      assertFalse(lease.verify(), "verify of a lost lease");
      lease.release(); // no-op on a lost lease; must not throw or hang
      assertTimeoutPreemptively(Duration.ofSeconds(5), m::close);

      failing.failing(false);
      LeaseManager next = f.manager("next", TIMINGS);
      Fixture.await(
          "a claim once the database let the lease expire",
          Duration.ofSeconds(5),
          () -> claim(next, "outage").isPresent());
      assertTrue(f.row("outage").term() > lease.term());
    }
  }

  /**
   * Negative control: a holder whose monotonic clock runs at a fifth of real speed gives up about
   * 2.5 s into the outage; the same bound (1.2 s plus the reference timer's lateness) catches it.
   */
  @OnEveryDatabase
  void slowClockHolderIsCaughtByTheSameBound(TestDatabase db) throws InterruptedException {
    try (Fixture f = new Fixture(db)) {
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      Losses losses = new Losses();
      long origin = System.nanoTime();
      LeaseManager m =
          f.track(
              f.builder(failing, "slow")
                  .timings(TIMINGS)
                  .listener(losses)
                  .clock(() -> origin + (System.nanoTime() - origin) / 5)
                  .build());
      Lease lease = claim(m, "outage").orElseThrow().hold();
      assertTrue(renew(lease));
      long outage = System.nanoTime();
      LateTimer reference = new LateTimer(outage);
      failing.failing(true);
      assertTrue(losses.lost.await(5, TimeUnit.SECONDS), "lease given up");
      AssertionFailedError caught =
          assertThrows(
              AssertionFailedError.class,
              () -> assertGaveUpWithinTheLocalDeadline(losses, outage, reference));
      assertTrue(caught.getMessage().contains("into the outage"), caught.getMessage());
    }
  }

  /**
   * A claim for the test's set-up, before or after the outage: this test is about what happens in
   * between, so an attempt that ran out of its 200 ms on a loaded machine is tried again (10 s).
   */
  private static Optional<Lease> claim(LeaseManager m, String name) {
    return retryingTimeouts(() -> m.tryClaim(name));
  }

  /** A renewal before the outage, tried again like {@link #claim} if it ran out of time. */
  private static boolean renew(Lease lease) {
    return retryingTimeouts(lease::renew);
  }

  private static <T> T retryingTimeouts(Supplier<T> attempt) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      try {
        return attempt.get();
      } catch (Attempts.AttemptTimedOut e) {
        if (System.nanoTime() - deadline > 0) {
          throw e;
        }
      }
    }
  }

  private static void assertGaveUpWithinTheLocalDeadline(
      Losses losses, long outageNanos, LateTimer reference) {
    long after = losses.lostAfterMs(outageNanos);
    long late = reference.latenessMs();
    assertTrue(
        after <= LOCAL_DEADLINE_MS + SLACK_MS + late,
        "given up "
            + after
            + " ms into the outage (local deadline "
            + LOCAL_DEADLINE_MS
            + " ms; a reference timer due then ran "
            + late
            + " ms late)");
  }

  /** Connections that hang (a database behind a black hole) must not delay the loss. */
  @OnEveryDatabase
  void hangingConnectionsMidHoldEndTheLeaseWithinTheLocalDeadline(TestDatabase db)
      throws InterruptedException {
    try (Fixture f = new Fixture(db)) {
      HangingDataSource hanging = new HangingDataSource(f.pool(2));
      Losses losses = new Losses();
      LeaseManager m = holder(f, hanging, losses);
      try {
        Lease lease = claim(m, "hang").orElseThrow().hold();
        assertTrue(renew(lease));
        long outage = System.nanoTime();
        LateTimer reference = new LateTimer(outage);
        hanging.hang.set(1);
        assertTrue(losses.lost.await(5, TimeUnit.SECONDS), "lease given up");
        assertEquals(LossReason.LOCAL_DEADLINE, losses.reason);
        assertGaveUpWithinTheLocalDeadline(losses, outage, reference);
        assertFalse(lease.isHeld());
      } finally {
        hanging.release.countDown();
      }
    }
  }

  /**
   * Renewals that wait on a row lock held by another transaction are bounded by the attempt timeout
   * (lock and statement timeouts, the network timeout, SQLite's busy timeout): attempts fail rather
   * than hang, and the holder gives up within the local deadline.
   */
  @OnEveryDatabase
  void renewalsBlockedByARowLockAreBoundedAndTheLeaseEndsInTime(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      Losses losses = new Losses();
      LeaseManager m = holder(f, f.pool(4), losses);
      Lease lease = claim(m, "locked").orElseThrow().hold();
      assertTrue(renew(lease));
      try (Connection locker = f.admin.getConnection()) {
        long lockedAt;
        if (db.isSqlite()) {
          try (Statement s = locker.createStatement()) {
            s.execute("BEGIN IMMEDIATE"); // the write lock of the whole file
          }
          lockedAt = System.nanoTime();
        } else {
          locker.setAutoCommit(false);
          try (PreparedStatement ps =
              locker.prepareStatement(
                  "SELECT term FROM " + f.table + " WHERE name = ? FOR UPDATE")) {
            ps.setString(1, "locked");
            ps.executeQuery().close();
          }
          lockedAt = System.nanoTime();
        }
        LateTimer reference = new LateTimer(lockedAt);
        try {
          assertTrue(losses.lost.await(5, TimeUnit.SECONDS), "lease given up");
          long after = losses.lostAfterMs(lockedAt);
          long late = reference.latenessMs();
          assertTrue(
              after <= LOCAL_DEADLINE_MS + SLACK_MS + late,
              "given up "
                  + after
                  + " ms after the row was locked (a reference timer due at the local deadline"
                  + " ran "
                  + late
                  + " ms late)");
          assertEquals(LossReason.LOCAL_DEADLINE, losses.reason);
          Fixture.await(
              "a bounded renewal attempt to fail",
              Duration.ofSeconds(3),
              () -> losses.failedRenewals.get() >= 1);
        } finally {
          if (db.isSqlite()) {
            try (Statement s = locker.createStatement()) {
              s.execute("ROLLBACK");
            }
          } else {
            locker.rollback();
            locker.setAutoCommit(true);
          }
        }
      }
      assertFalse(lease.isHeld());
      assertTimeoutPreemptively(Duration.ofSeconds(5), m::close);
      LeaseManager next = f.manager("next", TIMINGS);
      Fixture.await(
          "a claim once the database let the lease expire",
          Duration.ofSeconds(5),
          () -> claim(next, "locked").isPresent());
    }
  }

  /** While {@code hang} is 1, getConnection blocks until the test ends (a black-holed database). */
  static final class HangingDataSource extends ConnectionSource {
    final DataSource delegate;
    final AtomicInteger hang = new AtomicInteger();
    final CountDownLatch release = new CountDownLatch(1);

    HangingDataSource(DataSource delegate) {
      this.delegate = delegate;
    }

    @Override
    public Connection getConnection() throws SQLException {
      if (hang.get() == 1) {
        try {
          release.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        throw new SQLException("black hole (injected by the test)", "08001");
      }
      return delegate.getConnection();
    }
  }
}
