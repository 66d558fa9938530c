package dev.lease.core;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;

/**
 * The SQL of the lease protocol for one database, readable as text, with the reason for each
 * non-obvious choice beside it. Every statement reads {@code :now} from the database server's clock
 * inside the statement ({@link #clock}); no user value is ever concatenated into SQL (the table name is
 * a validated identifier, see {@link Names#table}).
 */
abstract class Dialect {

  /** Result of a successful claim: the new term and the expiry the database recorded. */
  record Claimed(long term, long expiresAtMs, long databaseNowMs) {}

  /** A unit of lease SQL run on one borrowed connection. */
  interface SqlCall<T> {
    T call(Connection c) throws SQLException;
  }

  final String table;
  /** SQL expression: the database server's clock, UTC epoch milliseconds, as a bigint. */
  final String clock;

  Dialect(String table, String clock) {
    this.table = table;
    this.clock = clock;
  }

  /** The database's name for messages and logs: "PostgreSQL", "MySQL", "MariaDB", "SQLite". */
  abstract String product();

  /** The statements that create the lease table if it does not exist (idempotent). */
  abstract List<String> ddl();

  abstract boolean isMissingTable(SQLException e);

  /**
   * Runs lease statements on {@code c} with each attempt bounded by the database's own timeouts, in
   * the isolation the dialect needs, committed at the end (or rolled back on failure).
   */
  abstract <T> T inLeaseSession(Connection c, long timeoutMs, SqlCall<T> call) throws SQLException;

  /** Creates the row of {@code name} once (term 0, expired); does nothing if it exists. */
  abstract void createRow(Connection c, String name) throws SQLException;

  /** Claims {@code name} if it is expired by the database clock; null if someone holds it. */
  abstract Claimed claim(Connection c, String name, String holder, String instance, long leaseMs)
      throws SQLException;

  /**
   * The verify statement: selects the term when {@code holder} still holds {@code name} at
   * {@code term} by the database clock. In strict mode it also takes the lock on the lease row that
   * the claim of the next term must wait for.
   */
  abstract String verifySql(boolean strict);

  /**
   * Statements to run once on a connection before strict verifies, bounding how long a paused
   * holder's open transaction can delay a takeover; empty when the verify statement carries them.
   */
  List<String> strictSessionBounds(long idleInTransactionMs, long lockWaitMs) {
    return List.of();
  }

  /** Binds the parameters of {@link #verifySql}; returns the next free index. */
  int bindVerify(PreparedStatement ps, String name, String holder, long term, boolean strict,
      long idleInTransactionMs) throws SQLException {
    ps.setString(1, name);
    ps.setString(2, holder);
    ps.setLong(3, term);
    return 4;
  }

  // ---- statements every dialect writes the same way ----------------------------------------------

  /**
   * Renew: extends the lease only for its holder and only while the database has not yet let it
   * expire. {@code revision} is bumped so that a match always changes the row: the MySQL drivers then
   * report 1 whether they count found or changed rows.
   */
  boolean renew(Connection c, String name, String holder, long term, long leaseMs)
      throws SQLException {
    String sql = "UPDATE " + table + " SET expires_at_ms = " + clock + " + ?, revision = revision + 1"
        + " WHERE name = ? AND holder = ? AND term = ? AND expires_at_ms > " + clock;
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setLong(1, leaseMs);
      ps.setString(2, name);
      ps.setString(3, holder);
      ps.setLong(4, term);
      return ps.executeUpdate() == 1;
    }
  }

  /** Release: the row expires at once, so anyone may claim it; only its holder can release it. */
  boolean release(Connection c, String name, String holder, long term) throws SQLException {
    String sql = "UPDATE " + table + " SET expires_at_ms = 0, revision = revision + 1"
        + " WHERE name = ? AND holder = ? AND term = ?";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, name);
      ps.setString(2, holder);
      ps.setLong(3, term);
      return ps.executeUpdate() == 1;
    }
  }

  /** The database clock, UTC epoch milliseconds. */
  long now(Connection c) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT " + clock)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Fails with a clear error when the lease table does not exist. */
  void checkTable(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT name, holder, instance, term, expires_at_ms, revision"
            + " FROM " + table + " WHERE 1 = 0")) {
      rs.next();
    }
  }

  // ---- detection ----------------------------------------------------------------------------------

  static final String SUPPORTED = "PostgreSQL, MySQL, MariaDB and SQLite 3.42 or later";

  /**
   * Chooses the dialect from the connection's metadata, never from the URL: MySQL Connector/J
   * connected to MariaDB reports product "MySQL" and a version such as "5.5.5-10.11.19-MariaDB".
   *
   * @param clockFunction a SQL function name to read the clock from instead of the server clock
   *     (tests with a controlled database clock), or null
   */
  static Dialect detect(Connection c, String table, String clockFunction) throws SQLException {
    DatabaseMetaData md = c.getMetaData();
    String product = md.getDatabaseProductName();
    String version = md.getDatabaseProductVersion();
    String p = product == null ? "" : product.toLowerCase(Locale.ROOT);
    String v = version == null ? "" : version.toLowerCase(Locale.ROOT);
    String fn = clockFunction == null ? null : clockFunction + "()";
    if (p.contains("postgresql")) {
      return new PostgresDialect(table, fn);
    }
    if (p.contains("mariadb") || (p.contains("mysql") && v.contains("mariadb"))) {
      return new MySqlDialect(table, fn, true);
    }
    if (p.contains("mysql")) {
      return new MySqlDialect(table, fn, false);
    }
    if (p.contains("sqlite")) {
      SqliteDialect.checkVersion(c);
      return new SqliteDialect(table, fn);
    }
    throw new LeaseException("database " + product + " " + version + " is not supported; the"
        + " lease table must live in " + SUPPORTED);
  }
}
