package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.OutsideTransactionPolicy;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;

/**
 * Review S7 (MySQL/MariaDB): a procedure whose body runs {@code SET autocommit = 1} leaves the
 * session in autocommit mode while Connector/J (and MariaDB Connector/J) keep reporting the mode
 * they last set. The re-verify after the CALL must ask the server first: otherwise it and every
 * statement after it run in server autocommit, each committing on its own without the verify's
 * lock, while the fence believes in a verified transaction.
 */
class RoutineAutocommitTest {

  @OnMySqlFamily
  void afterACallThatTurnedAutocommitOnTheNextStatementRunsAsItsOwnVerifiedTransaction(
      TestDatabase db) throws Exception {
    // the fence learned the server's mode: the driver reports autocommit, and the statement
    // ran as an autocommit statement (its own verified transaction)
    assertEquals(List.of(true, 3), afterCall(db, FencingOptions.builder()));
  }

  /** Negative control: trusting the driver's cached flag, the fence never learns it. */
  @OnMySqlFamily
  void negativeControlTrustingTheDriversFlagTheFenceBelievesInItsTransaction(TestDatabase db)
      throws Exception {
    assertEquals(
        List.of(false, 3),
        afterCall(
            db, WeakenedFence.weaken(FencingOptions.builder(), WeakenedFence.NO_DRIVER_SESSION)));
  }

  /** What the driver reports after the statement that follows the CALL, and the verifies. */
  private static List<Object> afterCall(TestDatabase db, FencingOptions.Builder options)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      String proc = TestDatabase.uniqueTable("p");
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute("CREATE PROCEDURE " + proc + "() BEGIN SET autocommit = 1; END");
      }
      try {
        Lease lease = f.holding("ac");
        FencedDataSource ds =
            f.fenced(
                options
                    .listener(f.counter)
                    .outsideTransaction(OutsideTransactionPolicy.VERIFY_FIRST)
                    .build());
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection();
            Statement s = c.createStatement()) {
          c.setAutoCommit(false);
          f.insert(c, 1, lease.term()); // verify 1
          s.execute("CALL " + proc + "()"); // verify 2 before it; the server commits row 1
          f.insert(c, 2, lease.term()); // verify 3
          boolean autoCommit = c.getAutoCommit();
          if (!autoCommit) {
            c.rollback();
          }
          c.setAutoCommit(true);
          return List.of(autoCommit, f.verified.get());
        }
      } finally {
        try (Connection c = f.pool.getConnection();
            Statement s = c.createStatement()) {
          s.execute("DROP PROCEDURE IF EXISTS " + proc);
        }
      }
    }
  }
}
