package dev.lease.core.dialect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.WeakenedSql;
import dev.lease.core.internal.SqlRules;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The statements the {@link SqlRules} pieces go into, under {@link SqlRules#PRODUCTION}, pinned as
 * text (issue 21; issue 41 changed the terms to the database clock in µs, issue 35 named the
 * built-in functions in {@code pg_catalog}). Beside each, the weakened rule changes the text.
 */
class SqlRulesTextTest {

  private static final String PG_CLOCK =
      "(pg_catalog.floor(EXTRACT(epoch FROM pg_catalog.clock_timestamp()) * 1000))::bigint";

  private static final String PG_MICROS =
      "(pg_catalog.floor(EXTRACT(epoch FROM pg_catalog.clock_timestamp()) * 1000000))::bigint";

  @Test
  void theNewRowsFirstTermIsTheClockInMicroseconds() {
    assertEquals(
        "INSERT INTO leases (name, term) VALUES (?, "
            + PG_MICROS
            + ") ON CONFLICT (name) DO NOTHING",
        ((StandardDialect) Dialect.postgresql("leases")).createRowSql());
    assertEquals(
        "INSERT INTO leases (name, term) VALUES (?, (CAST(unixepoch('now', 'subsec') * 1000 AS"
            + " INTEGER) * 1000)) ON CONFLICT (name) DO NOTHING",
        ((StandardDialect) Dialect.sqlite("leases")).createRowSql());
    assertEquals(
        "INSERT IGNORE INTO leases (name, term) VALUES (?, TIMESTAMPDIFF(MICROSECOND,"
            + " '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))",
        ((StandardDialect) Dialect.mysql("leases")).createRowSql());
    assertEquals(
        "INSERT INTO leases (name, term) VALUES (?, 0) ON CONFLICT (name) DO NOTHING",
        new PostgresDialect("leases", null, WeakenedSql.termFromZero()).createRowSql());
  }

  @Test
  void batchesForceThePrimaryKeyOnMySqlAndMariaDb() {
    assertEquals("leases FORCE INDEX (PRIMARY)", Dialect.mysql("leases").tableByPrimaryKey());
    assertEquals("leases FORCE INDEX (PRIMARY)", Dialect.mariadb("leases").tableByPrimaryKey());
    assertEquals("leases", Dialect.postgresql("leases").tableByPrimaryKey());
    assertEquals(
        "leases",
        new MySqlDialect("leases", null, false, WeakenedSql.batchScansTable()).tableByPrimaryKey());
  }

  @Test
  void thePostgresTransferLocksTheRowForUpdate() {
    String production = transferSql(Dialect.postgresql("leases"));
    assertEquals(
        "WITH held AS (SELECT name FROM leases WHERE name = ? AND holder = ? AND term = ? AND "
            + "(pg_catalog.set_config('lock_timeout', ?, true)"
            + " || pg_catalog.set_config('idle_in_transaction_session_timeout', ?, true)) IS NOT"
            + " NULL AND expires_at_ms > "
            + PG_CLOCK
            + " FOR UPDATE) UPDATE leases t SET holder = ?, instance = ?, term = GREATEST(t.term +"
            + " 1, "
            + PG_MICROS
            + "),"
            + " expires_at_ms = "
            + PG_CLOCK
            + " + ?, revision = t.revision + 1 FROM held WHERE t.name = held.name RETURNING"
            + " t.term",
        production);
    String weakened =
        transferSql(new PostgresDialect("leases", null, WeakenedSql.transferWithoutForUpdate()));
    assertFalse(weakened.contains("FOR UPDATE"), weakened);
    assertEquals(production.replace(" FOR UPDATE)", ")"), weakened);
  }

  /** The text the transfer step prepares (the connection refuses to run it). */
  private static String transferSql(Dialect d) {
    List<String> prepared = new ArrayList<>();
    Connection c =
        (Connection)
            Proxy.newProxyInstance(
                Connection.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("prepareStatement")) {
                    prepared.add((String) args[0]);
                  }
                  throw new SQLException("not run");
                });
    try {
      d.transferStep(c, "a", "h", 1, "s", 1_000, 1_000);
    } catch (SQLException expected) {
      // the text is all this test needs
    }
    assertEquals(1, prepared.size(), prepared.toString());
    assertTrue(prepared.get(0).startsWith("WITH held"), prepared.get(0));
    return prepared.get(0);
  }
}
