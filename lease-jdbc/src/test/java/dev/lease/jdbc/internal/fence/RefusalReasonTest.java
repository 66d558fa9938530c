package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.LeaseLostSQLException.Reason;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * A caller learns why the fence refused without comparing SQLStates (issue 40 item 4): a holder
 * paused inside its transaction past its lease gets {@code LF002} (poisoned), not {@code LF001},
 * and code that checks only {@code LF001} misses it; {@link LeaseLostSQLException#reason()} says
 * what happened whatever the SQLState, and a poisoned transaction keeps the reason of what poisoned
 * it.
 */
class RefusalReasonTest {

  /** Renewed every 2 s, lost locally after 10 s without a renewal. */
  static final LeaseTimings TIMINGS = LeaseTimings.of(Duration.ofSeconds(15));

  @OnEveryDatabase
  void aHolderPausedInsideItsTransactionIsToldItsLeaseWasLostLocally(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.manager("paused", TIMINGS).tryClaim("paused").orElseThrow();
      DataSource fenced = f.fenced(f.options().build());
      try (Connection c = fenced.getConnection();
          LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term()); // verified
        f.skew.addAndGet(TimeUnit.SECONDS.toNanos(11)); // "paused" past the local deadline of 10 s
        assertFalse(lease.isHeld()); // lost; the loss poisons the transaction off this thread
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (f.poisoned.get() == 0 && System.nanoTime() - deadline < 0) {
          LockSupport.parkNanos(5_000_000L);
        }
        assertEquals(1, f.poisoned.get(), "the loss never poisoned the transaction");
        LeaseLostSQLException statement =
            assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 2, lease.term()));
        LeaseLostSQLException commit = assertThrows(LeaseLostSQLException.class, c::commit);
        c.rollback();
        assertEquals(LeaseLostSQLException.POISONED, statement.getSQLState());
        assertEquals(Reason.LOST_LOCALLY, statement.reason(), statement.getMessage());
        assertEquals(Reason.LOST_LOCALLY, commit.reason(), commit.getMessage());
      }
      assertEquals(0, f.count(null));
    }
  }

  @OnEveryDatabase
  void aDatabaseRefusalKeepsItsReasonThroughThePoison(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.manager("refused", TIMINGS).tryClaim("refused").orElseThrow();
      DataSource fenced = f.fenced(f.options().build());
      f.takeOver(lease); // the database's row names a successor; this process still thinks it holds
      try (Connection c = fenced.getConnection();
          LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        c.setAutoCommit(false);
        LeaseLostSQLException first =
            assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 1, lease.term()));
        LeaseLostSQLException commit = assertThrows(LeaseLostSQLException.class, c::commit);
        c.rollback();
        assertEquals(LeaseLostSQLException.REFUSED, first.getSQLState());
        assertEquals(Reason.REFUSED_BY_DATABASE, first.reason(), first.getMessage());
        assertEquals(LeaseLostSQLException.POISONED, commit.getSQLState());
        assertEquals(
            Reason.REFUSED_BY_DATABASE,
            commit.reason(),
            "a poisoned transaction tells what poisoned it, not only that it is poisoned");
      }
      assertEquals(0, f.count(null));
    }
  }

  @OnEveryDatabase
  void aReleasedLeaseAChangedLeaseAndAStatementNotAllowedEachSayWhich(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease released = f.manager("released", TIMINGS).tryClaim("released").orElseThrow();
      Lease other = f.manager("other", TIMINGS).tryClaim("other").orElseThrow();
      DataSource fenced = f.fenced(f.options().build());
      released.close();
      try (Connection c = fenced.getConnection()) {
        c.setAutoCommit(false);
        try (LeaseContext.Scope scope = LeaseContext.bind(released)) {
          LeaseLostSQLException e =
              assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 1, released.term()));
          assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
          assertEquals(Reason.LOST_LOCALLY, e.reason(), e.getMessage());
        }
        c.rollback();

        try (LeaseContext.Scope scope = LeaseContext.bind(other)) {
          f.insert(c, 2, other.term());
        }
        LeaseLostSQLException changed;
        try (LeaseContext.Scope scope = LeaseContext.bind(released)) {
          changed = assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 3, other.term()));
        }
        c.rollback();
        assertEquals(LeaseLostSQLException.LEASE_CHANGED, changed.getSQLState());
        assertEquals(Reason.LEASE_CHANGED, changed.reason());

        try (LeaseContext.Scope scope = LeaseContext.bind(other);
            Statement s = c.createStatement()) {
          LeaseLostSQLException mixed =
              assertThrows(
                  LeaseLostSQLException.class,
                  () -> s.execute("COMMIT; UPDATE " + f.data + " SET note = 'x'"));
          assertEquals(LeaseLostSQLException.TRANSACTION_CONTROL_MIXED, mixed.getSQLState());
          assertEquals(Reason.NOT_ALLOWED_UNDER_LEASE, mixed.reason());
        }
        c.rollback();
      }
      assertEquals(0, f.count(null));
    }
  }
}
