package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.LossReason;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.LifecycleRules;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.util.Optional;
import java.util.concurrent.Executor;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * One refused transaction is reported once (issue 22: two WARN lines for one refused transaction,
 * seen through the agent with DBCP2 and c3p0, whose timing only made it likelier). A refusal by the
 * database also loses the lease, and the lease's loss listeners, which poison its open
 * transactions, run on the loss executor: when one ran before the refusing thread marked the
 * transaction, the transaction was reported twice, poisoned and then refused. Here the manager runs
 * its loss callbacks inline ({@link LossHandlingInline}), the earliest they can run, so that order
 * happens every time (the commit test failed with the old order: one poisoning besides the
 * refusal). The other half, not visible to listeners: when the refusal is what lost the lease,
 * lease-core's "lost lease ...: the database refused a fenced transaction" is its WARN line and the
 * fence logs the refusal at DEBUG.
 */
class RefusalReportedOnceTest {

  /** A manager whose loss callbacks (the fence's poisoning among them) run inside the loss. */
  private static LeaseManager inlineLossManager(Fixture f) {
    return f.closeLater(
        LeaseInternals.rulesForTesting(
                LeaseManager.builder(f.pool)
                    .table(f.leaseTable)
                    .instance("holder")
                    .timings(LeaseTimings.DEFAULTS)
                    .failurePolicy(FailurePolicy.logOnly())
                    .createTableIfMissing(),
                new LossHandlingInline())
            .build());
  }

  /** The loss's callbacks and listeners run on the thread that found the loss, at once. */
  private static final class LossHandlingInline implements LifecycleRules {
    @Override
    public void dispatchLoss(Runnable callbacks, Executor lossExecutor) {
      callbacks.run();
    }
  }

  @OnEveryDatabase
  void aTransactionRefusedByTheDatabaseIsReportedOnceThoughItsLossListenersRunFirst(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = inlineLossManager(f).tryClaim("once").orElseThrow();
      f.takeOver(lease); // the database gives the name away; the holder does not know yet
      FencedDataSource ds = f.fenced(f.options().build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        LeaseLostSQLException e =
            assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 1, lease.term()));
        assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState(), db + ": " + e.getMessage());
        c.rollback();
      }
      assertEquals(
          Optional.of(LossReason.DATABASE),
          lease.lossReason(),
          db + ": the refusal lost the lease, so its loss listeners ran");
      assertEquals(1, f.refused.get(), db + ": one refusal");
      assertEquals(0, f.poisoned.get(), db + ": and not also a poisoning of the same transaction");
      assertEquals(0, f.count(null), db + ": nothing committed");
    }
  }

  /**
   * A verified transaction (its loss listener registered) whose commit the server refuses:
   * PostgreSQL's commit carries its proof; VERIFY mode takes no lock, so the successor's claim goes
   * through while it is open. Before the fix the listener poisoned it first (one report) and the
   * refusal reported it again.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("postgresql")
  void aCommitRefusedByTheDatabaseIsReportedOnceThoughItsLossListenerPoisonedItFirst(
      TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = inlineLossManager(f).tryClaim("once-commit").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().mode(FencingMode.VERIFY).build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term()); // verified: the transaction listens for the lease's loss
        f.takeOver(lease);
        LeaseLostSQLException e = assertThrows(LeaseLostSQLException.class, c::commit);
        assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState(), db + ": " + e.getMessage());
        c.rollback();
      }
      assertEquals(Optional.of(LossReason.DATABASE), lease.lossReason(), db + ": lost by it");
      assertEquals(1, f.verified.get(), db + ": one verify");
      assertEquals(1, f.refused.get(), db + ": one refusal");
      assertEquals(0, f.poisoned.get(), db + ": and not also a poisoning of the same transaction");
      assertEquals(0, f.count(null), db + ": nothing committed");
    }
  }

  static java.util.stream.Stream<TestDatabase> postgresql() {
    return java.util.stream.Stream.of(TestDatabase.POSTGRESQL);
  }
}
