package dev.lease.core.dialect;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The MySQL/MariaDB verify refuses in the server, by an error, also when the session limits the
 * rows a SELECT returns ({@code sql_select_limit = 0}): without its own {@code LIMIT} the refusing
 * verify returned an empty result there instead of its error, so a statement carried after it in
 * one text (allowMultiQueries) ran. The negative control runs the same verify without its {@code
 * LIMIT 1}: no error.
 */
class VerifyUnderSelectLimitTest extends LeaseTableTest {

  /** The refusing verify (a holder that does not hold the row) under sql_select_limit = 0. */
  private void verifyUnderZeroLimit(TestDatabase db, boolean withoutItsLimit) throws SQLException {
    open(db, 2, "selectlimit");
    Lease lease = manager.tryClaim("limited").orElseThrow();
    Dialect d = dialect;
    String sql = d.verifySql(true);
    assertTrue(sql.contains(" LIMIT 1"), sql);
    if (withoutItsLimit) {
      sql = sql.replace(" LIMIT 1", "");
    }
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("SET SESSION sql_select_limit = 0");
      }
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        int i = 1;
        for (Object v :
            d.verifyParameters("limited", "not-the-holder", lease.term(), true, 60_000)) {
          ps.setObject(i++, v);
        }
        try (ResultSet rs = ps.executeQuery()) {
          assertFalse(rs.next(), db + ": the verify returned a row for another holder");
        }
      } finally {
        c.rollback();
        try (Statement s = c.createStatement()) {
          s.execute("SET SESSION sql_select_limit = DEFAULT");
        }
      }
    }
  }

  @OnMySqlFamily
  void theVerifyRefusesByAnErrorUnderSqlSelectLimitZero(TestDatabase db) {
    SQLException e =
        assertThrows(SQLException.class, () -> verifyUnderZeroLimit(db, false), db.toString());
    assertTrue(Dialect.isRefusal(e), db + ": " + e);
  }

  /** Negative control: without its LIMIT 1 the refusing verify returns nothing and no error. */
  @OnMySqlFamily
  void negativeControlWithoutItsLimitTheVerifyReturnsNothing(TestDatabase db) throws Exception {
    verifyUnderZeroLimit(db, true);
  }
}
