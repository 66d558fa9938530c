package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.SqlRules;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * Issue 23: a transfer fences the old holder exactly as a claim of the next term does. Under STRICT
 * it waits for the old holder's verified transaction, which commits before it; a transaction the
 * old holder begins after it is refused, and nothing of it commits. Negative control (PostgreSQL,
 * the one database where a plain UPDATE does not wait for the verify's {@code FOR KEY SHARE}): the
 * transfer without {@code FOR UPDATE} goes through while the old holder's transaction is open, and
 * that transaction then commits after term t+1 did.
 */
class TransferFencingTest {

  private static final LeaseTimings TIMINGS =
      LeaseTimings.builder()
          .leaseDuration(java.time.Duration.ofSeconds(20))
          .renewInterval(java.time.Duration.ofSeconds(2))
          .localDeadline(java.time.Duration.ofSeconds(12))
          .attemptTimeout(java.time.Duration.ofSeconds(10))
          .gracePeriod(java.time.Duration.ofSeconds(1))
          .build();

  @OnEveryDatabase
  void aTransferWaitsForTheOldHoldersStrictTransactionWhichCommitsBeforeIt(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 4)) {
      LeaseManager a = f.manager("a", TIMINGS);
      LeaseManager b = f.manager("b", TIMINGS);
      Lease old = a.tryClaim("t").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().build());
      CompletableFuture<Boolean> transfer;
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        try (LeaseContext.Scope scope = LeaseContext.bind(old)) {
          f.insert(c, 1, old.term()); // verified under term t, with STRICT's lock
          transfer = CompletableFuture.supplyAsync(() -> old.transferTo("b"));
          // still waiting for this transaction (a bounded look: early completion is the failure)
          assertThrows(
              TimeoutException.class,
              () -> transfer.get(500, TimeUnit.MILLISECONDS),
              db + ": the transfer waits for the open verified transaction");
          c.commit();
        }
      }
      assertTrue(transfer.get(20, TimeUnit.SECONDS), db + ": transferred after the commit");
      assertEquals(1, f.count("id = 1"), db + ": term t's transaction committed before it");
      Lease adopted = b.tryClaim("t").orElseThrow();
      assertTrue(adopted.term() > old.term());
    }
  }

  @OnEveryDatabase
  void aTransactionOfTheOldHolderAfterTheTransferIsRefused(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 4)) {
      LeaseManager a = f.manager("a", TIMINGS);
      LeaseManager b = f.manager("b", TIMINGS);
      Lease old = a.tryClaim("t").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().build());
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        try (LeaseContext.Scope scope = LeaseContext.bind(old)) {
          f.insert(c, 1, old.term());
          c.commit();
          assertTrue(old.transferTo("b"), db + ": transferred");
          LeaseLostSQLException e =
              assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 2, old.term()));
          assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
          c.rollback();
        }
      }
      Lease adopted = b.tryClaim("t").orElseThrow();
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        try (LeaseContext.Scope scope = LeaseContext.bind(adopted)) {
          f.insert(c, 3, adopted.term());
          c.commit();
        }
      }
      assertEquals(0, f.count("id = 2"), db + ": nothing of the refused transaction");
      assertEquals(2, f.count(null), db + ": term t's and term t+1's commits");
    }
  }

  /**
   * PostgreSQL's transfer as a plain UPDATE, without the {@code FOR UPDATE} of the claim: it does
   * not wait for the old holder's strict-verified transactions ({@code FOR KEY SHARE}).
   */
  private static final SqlRules TRANSFER_WITHOUT_FOR_UPDATE =
      new SqlRules() {
        @Override
        public String postgresTransferRowLock() {
          return "";
        }
      };

  /** Negative control: the transfer without FOR UPDATE lets term t commit after term t+1. */
  @Test
  void negativeControlPostgresTransferWithoutForUpdateLetsTermTCommitAfterIt() throws Exception {
    TestDatabase db = TestDatabase.POSTGRESQL;
    try (Fixture f = new Fixture(db, 4)) {
      LeaseManager a =
          f.closeLater(
              LeaseInternals.sqlRulesForTesting(
                      LeaseManager.builder(f.pool)
                          .table(f.leaseTable)
                          .instance("a")
                          .timings(TIMINGS)
                          .failurePolicy(FailurePolicy.logOnly())
                          .createTableIfMissing(),
                      TRANSFER_WITHOUT_FOR_UPDATE)
                  .build());
      Lease old = a.tryClaim("t").orElseThrow();
      // the commit without its proof (issue 25's CLIENT refusal): on PostgreSQL the proof riding in
      // the COMMIT would refuse term t's commit too, so the lock alone is what this control breaks
      FencedDataSource ds =
          f.fenced(WeakenedFence.weaken(f.options(), WeakenedFence.PREVIOUS_REFUSAL).build());
      long transferredTerm;
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        try (LeaseContext.Scope scope = LeaseContext.bind(old)) {
          f.insert(c, 1, old.term());
          CompletableFuture<Boolean> transfer =
              CompletableFuture.supplyAsync(() -> old.transferTo("b"));
          assertTrue(
              transfer.get(20, TimeUnit.SECONDS),
              "the broken transfer went through while term t's transaction was open");
          transferredTerm = pendingTerm(f);
          c.commit(); // STRICT relies on the lock the broken transfer did not wait for
        }
      }
      assertTrue(transferredTerm > old.term());
      assertEquals(
          1, f.count("id = 1"), "term t committed after term t+1: what the real one stops");
    }
  }

  private static long pendingTerm(Fixture f) throws Exception {
    try (Connection c = f.pool.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT term FROM " + f.leaseTable + " WHERE name = 't'");
        ResultSet rs = ps.executeQuery()) {
      assertTrue(rs.next());
      assertFalse(rs.wasNull());
      return rs.getLong(1);
    }
  }
}
