package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.lease.core.Lease;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Loss ends work: when the lease is lost, the statement running under it on a fenced connection is
 * cancelled and its transaction poisoned, as a Go context would end them.
 */
class LeaseLossTest {

  @OnEveryDatabase
  void lossCancelsTheRunningStatementAndPoisonsItsTransaction(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.manager("loser", LeaseTimings.DEFAULTS).tryClaim("loser").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().build());
      AtomicReference<SQLException> commitError = new AtomicReference<>();
      Fixture.Worker worker =
          f.longQueryUnderLease(
              ds,
              lease,
              c -> {
                try {
                  c.commit();
                } catch (SQLException e) {
                  commitError.set(e);
                }
                c.rollback();
              });

      f.skew.addAndGet(TimeUnit.SECONDS.toNanos(11)); // past the local deadline of 10 s
      assertFalse(lease.isHeld()); // notices the deadline: the lease is lost, its listeners run

      worker.thread().join(15_000);
      assertFalse(worker.thread().isAlive(), "the statement was not cancelled");
      assertEquals(null, worker.failure().get());
      LeaseLostSQLException e =
          assertInstanceOf(LeaseLostSQLException.class, worker.queryError().get());
      assertEquals(LeaseLostSQLException.POISONED, e.getSQLState());
      assertEquals(LeaseLostSQLException.POISONED, commitError.get().getSQLState());
      assertEquals(1, f.poisoned.get());
      assertEquals(0, f.count(null), "the poisoned transaction was rolled back");
    }
  }
}
