package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.TimeZone;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * A JVM default time zone and a database session time zone far from UTC (Pacific/Kiritimati,
 * UTC+14, no DST) change nothing: the lease clock is UTC epoch milliseconds, expiry follows the
 * real clock. MariaDB here has no time zone tables and accepts offsets only up to '+13:00' (MariaDB
 * manual, "Time Zones": the range is -12:59 to +13:00), so its sessions get '+13:00'.
 */
class TimeZoneTest {

  private static final String ZONE = "Pacific/Kiritimati";
  private static final long OFFSET_MS = Duration.ofHours(14).toMillis();
  private static final LeaseTimings TIMINGS = Fixture.timings(1_500, 100, 1_000, 500, 200);

  private TimeZone saved;

  @BeforeEach
  void farFromUtc() {
    saved = TimeZone.getDefault();
    TimeZone.setDefault(TimeZone.getTimeZone(ZONE));
  }

  @AfterEach
  void restore() {
    TimeZone.setDefault(saved);
  }

  @OnEveryDatabase
  void farZonesChangeNothing(TestDatabase db) throws SQLException {
    assertEquals(OFFSET_MS, TimeZone.getDefault().getOffset(System.currentTimeMillis()));
    try (Fixture f = new Fixture(db)) {
      // one connection per pool, so the checks after the lease statements see the same session
      HikariDataSource zonedA = f.pool(1, cfg -> cfg.setConnectionInitSql(sessionZoneSql(db)));
      HikariDataSource zonedB = f.pool(1, cfg -> cfg.setConnectionInitSql(sessionZoneSql(db)));
      assertSessionIsFarFromUtc(db, zonedA);

      LeaseManager a = f.manager(zonedA, "a", TIMINGS);
      LeaseManager b = f.manager(zonedB, "b", TIMINGS);
      long dbNow = a.databaseTimeMillis();
      assertTrue(
          Math.abs(dbNow - System.currentTimeMillis()) < 5_000,
          "database time "
              + dbNow
              + " is within 5 s of System.currentTimeMillis() "
              + System.currentTimeMillis());

      long start = System.nanoTime();
      long before = a.databaseTimeMillis();
      Lease lease = a.tryClaim("zoned").orElseThrow();
      long after = a.databaseTimeMillis();
      long expires = f.row("zoned").expiresAtMs();
      assertTrue(
          expires >= before + 1_500 && expires <= after + 1_500,
          "expiry "
              + expires
              + " is the database's UTC now + 1500 ms, within ["
              + (before + 1_500)
              + ", "
              + (after + 1_500)
              + "]");
      assertTrue(b.tryClaim("zoned").isEmpty(), "live lease");
      assertTrue(lease.verify());

      Fixture.await(
          "b's claim after the expiry",
          Duration.ofSeconds(10),
          () -> b.tryClaim("zoned").isPresent());
      long elapsedMs = Duration.ofNanos(System.nanoTime() - start).toMillis();
      assertTrue(
          elapsedMs >= 1_490 && elapsedMs < 10_000,
          "the lease expired after " + elapsedMs + " ms of real time (lease 1500 ms)");

      // the lease statements left the pooled session as it was
      assertSessionIsFarFromUtc(db, zonedA);
      assertSessionIsFarFromUtc(db, zonedB);
    }
  }

  private static String sessionZoneSql(TestDatabase db) {
    return switch (db) {
      case POSTGRESQL -> "SET TIME ZONE '" + ZONE + "'";
      case MYSQL, MARIADB -> "SET time_zone = '+13:00'";
      case SQLITE -> null; // no session time zone; only the JVM default applies
    };
  }

  /**
   * The session really is at UTC+14: a zone-dependent clock expression reads 14 h ahead of the real
   * clock there, so this test would catch a lease clock that depended on the session zone.
   */
  private static void assertSessionIsFarFromUtc(TestDatabase db, HikariDataSource ds)
      throws SQLException {
    String naiveClock =
        switch (db) {
          case POSTGRESQL -> "SELECT (extract(epoch from localtimestamp) * 1000)::bigint";
          case MYSQL, MARIADB ->
              "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', NOW(6)) DIV 1000";
          case SQLITE -> null;
        };
    if (naiveClock == null) {
      return;
    }
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(naiveClock)) {
      rs.next();
      long skew = rs.getLong(1) - System.currentTimeMillis();
      long expected = db.isMySqlFamily() ? Duration.ofHours(13).toMillis() : OFFSET_MS;
      assertTrue(
          Math.abs(skew - expected) < 5_000,
          "a session-zone clock reads " + skew + " ms ahead, " + expected + " ms expected");
      if (!c.getAutoCommit()) {
        c.rollback();
      }
    }
  }
}
