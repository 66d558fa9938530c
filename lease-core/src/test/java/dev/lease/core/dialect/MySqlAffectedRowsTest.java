package dev.lease.core.dialect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Fixture;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * MySQL and MariaDB report for an UPDATE either the rows it found (CLIENT_FOUND_ROWS, the
 * Connector/J default, {@code useAffectedRows=false}) or the rows it changed ({@code
 * useAffectedRows=true}); see the MySQL C API manual, mysql_affected_rows(). Every protocol UPDATE
 * changes a column when it matches, so the answers are the same either way. The hard case is two
 * renewals within the same millisecond, which write the same {@code expires_at_ms}: the database
 * clock is frozen here (a SQL function returning a constant, through {@code
 * LeaseInternals#clockFunctionForTesting}), so every renewal is that case.
 */
class MySqlAffectedRowsTest {

  static Stream<Arguments> driversAndFlags() {
    return Stream.of(TestDatabase.MYSQL, TestDatabase.MARIADB)
        .flatMap(db -> Stream.of(Arguments.of(db, true), Arguments.of(db, false)));
  }

  @ParameterizedTest(name = "{0} useAffectedRows={1}")
  @MethodSource("driversAndFlags")
  void renewalsInTheSameMillisecondStillReportRenewed(TestDatabase db, boolean useAffectedRows)
      throws SQLException {
    try (Fixture f = new Fixture(db)) {
      DataSource ds =
          f.pool(2, cfg -> cfg.setJdbcUrl(db.url() + "&useAffectedRows=" + useAffectedRows));
      String frozen = TestDatabase.uniqueTable("lease_frozen_clock");
      long now = System.currentTimeMillis();
      execute(
          f.admin, "CREATE FUNCTION " + frozen + "() RETURNS BIGINT DETERMINISTIC RETURN " + now);
      try {
        LeaseManager m =
            f.track(
                LeaseInternals.clockFunctionForTesting(
                        f.builder(ds, "affected")
                            .timings(Fixture.timings(60_000, 2_000, 10_000, 5_000, 1_000)),
                        frozen)
                    .build());
        assertEquals(now, m.databaseTimeMillis(), "the database clock is frozen");
        Lease lease = m.tryClaim("same-ms").orElseThrow();
        assertEquals(now + 60_000, f.row("same-ms").expiresAtMs());
        for (int i = 0; i < 3; i++) {
          assertTrue(lease.renew(), "renewal " + (i + 1) + " at the same database millisecond");
        }
        assertTrue(lease.verify());
        assertEquals(
            now + 60_000, f.row("same-ms").expiresAtMs(), "nothing but the revision moved");

        // negative control: the same renewal without the revision bump is invisible to a driver
        // that counts changed rows, which is what the test would catch if the dialect dropped it
        int broken;
        try (Connection c = ds.getConnection();
            PreparedStatement ps =
                c.prepareStatement(
                    "UPDATE "
                        + f.table
                        + " SET expires_at_ms = "
                        + frozen
                        + "() + 60000 WHERE name = ? AND holder = ?")) {
          ps.setString(1, "same-ms");
          ps.setString(2, lease.holder());
          broken = ps.executeUpdate();
        }
        assertEquals(
            useAffectedRows ? 0 : 1,
            broken,
            "the driver counts " + (useAffectedRows ? "changed" : "found") + " rows");

        lease.release();
        assertEquals(0, f.row("same-ms").expiresAtMs());
        Lease next =
            m.tryClaim("same-ms")
                .orElseThrow(
                    () ->
                        new AssertionError("claim after release at the same database millisecond"));
        assertTrue(next.term() > lease.term());
        assertTrue(m.tryClaim("same-ms").isEmpty(), "held");
      } finally {
        execute(f.admin, "DROP FUNCTION IF EXISTS " + frozen);
      }
    }
  }

  /** Renewals back to back on the real clock: many land in the same millisecond. */
  @ParameterizedTest(name = "{0} useAffectedRows={1}")
  @MethodSource("driversAndFlags")
  void backToBackRenewalsOnTheRealClockAllReportRenewed(TestDatabase db, boolean useAffectedRows) {
    try (Fixture f = new Fixture(db)) {
      DataSource ds =
          f.pool(1, cfg -> cfg.setJdbcUrl(db.url() + "&useAffectedRows=" + useAffectedRows));
      LeaseManager m =
          f.manager(ds, "affected", Fixture.timings(60_000, 2_000, 10_000, 5_000, 1_000));
      Lease lease = m.tryClaim("back-to-back").orElseThrow();
      for (int i = 0; i < 50; i++) {
        assertTrue(lease.renew(), "renewal " + (i + 1));
      }
      assertEquals(50, f.row("back-to-back").revision() - 1, "one revision per renewal");
    }
  }

  private static void execute(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
