package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The building block of lease-jdbc: the verify statement run inside the caller's own transaction,
 * on a session far from UTC, plain and strict. It confirms the current holder and term only.
 */
class VerifyInTransactionTest {

  static Stream<Arguments> databasesAndModes() {
    return TestDatabase.all()
        .flatMap(db -> Stream.of(Arguments.of(db, "plain"), Arguments.of(db, "strict")));
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("databasesAndModes")
  void verifyConfirmsOnlyTheCurrentHolderAndTerm(TestDatabase db, String mode) throws SQLException {
    boolean strict = mode.equals("strict");
    try (Fixture f = new Fixture(db)) {
      LeaseTimings t = Fixture.timings(60_000, 2_000, 10_000, 5_000, 1_000);
      LeaseManager a = f.manager("a", t);
      LeaseManager b = f.manager("b", t);
      HikariDataSource business =
          f.pool(
              1,
              cfg -> {
                cfg.setAutoCommit(false);
                if (db.isMySqlFamily()) {
                  cfg.setConnectionInitSql("SET time_zone = '-11:00'");
                } else if (db == TestDatabase.POSTGRESQL) {
                  cfg.setConnectionInitSql("SET TIME ZONE 'Pacific/Pago_Pago'");
                }
              });
      Lease first = a.tryClaim("fenced").orElseThrow();
      assertTrue(verifyAndCommit(business, first, strict), "the holder, live");
      first.release();
      assertFalse(verifyAndCommit(business, first, strict), "after release");

      Lease second = b.tryClaim("fenced").orElseThrow();
      assertTrue(verifyAndCommit(business, second, strict), "the new holder");
      assertFalse(verifyAndCommit(business, first, strict), "the old term");

      if (db == TestDatabase.POSTGRESQL && strict) {
        // the idle-in-transaction bound is LOCAL: it ends with the verified transaction
        try (Connection c = business.getConnection()) {
          assertTrue(LeaseInternals.verifyInTransaction(second, c, true, Duration.ofMillis(1500)));
          assertEquals("1500ms", show(c, "idle_in_transaction_session_timeout"));
          c.commit();
          assertEquals("0", show(c, "idle_in_transaction_session_timeout"));
          c.commit();
        }
      }
    }
  }

  /**
   * What lease-jdbc needs to send the verify together with its own statement: the SQL text, its
   * parameter values (as many as it has placeholders), and a binder that starts at any index. Here
   * the plain verify is a derived table behind a parameter of the caller's own.
   */
  @OnEveryDatabase
  void theVerifyCanTravelWithAnotherStatement(TestDatabase db) throws SQLException {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = f.manager("combined", Fixture.timings(60_000, 2_000, 10_000, 5_000, 1_000));
      Lease lease = m.tryClaim("combined").orElseThrow();
      for (boolean strict : new boolean[] {false, true}) {
        String sql = LeaseInternals.verifySql(lease, strict);
        assertEquals(
            sql.chars().filter(ch -> ch == '?').count(),
            LeaseInternals.verifyParameters(lease, strict, Duration.ofSeconds(2)).size(),
            "one value per placeholder");
      }
      try (Connection c = f.admin.getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "SELECT ?, v.term FROM (" + LeaseInternals.verifySql(lease, false) + ") v")) {
        ps.setString(1, "mine");
        assertEquals(
            1 + 1 + LeaseInternals.verifyParameters(lease, false, Duration.ZERO).size(),
            LeaseInternals.bindVerify(lease, ps, 2, false, Duration.ZERO),
            "the next free index");
        try (ResultSet rs = ps.executeQuery()) {
          assertTrue(rs.next(), "verified");
          assertEquals("mine", rs.getString(1));
          assertEquals(lease.term(), rs.getLong(2));
        }
        if (!c.getAutoCommit()) {
          c.commit();
        }
      }
    }
  }

  private static boolean verifyAndCommit(HikariDataSource ds, Lease lease, boolean strict)
      throws SQLException {
    try (Connection c = ds.getConnection()) {
      boolean verified =
          LeaseInternals.verifyInTransaction(lease, c, strict, Duration.ofSeconds(2));
      c.commit();
      return verified;
    }
  }

  private static String show(Connection c, String setting) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
