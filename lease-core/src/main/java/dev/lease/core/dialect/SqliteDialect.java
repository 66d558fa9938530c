package dev.lease.core.dialect;

import dev.lease.core.LeaseException;
import dev.lease.core.internal.TestFault;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Set;

/** SQLite 3.42 or later (sqlite-jdbc 3.42+ bundles it). */
final class SqliteDialect extends Dialect {

  /**
   * 'now' is fixed within one statement step, so every use in a statement agrees. The 'subsec'
   * modifier exists since SQLite 3.42; older versions return NULL silently, hence {@link
   * #checkVersion}.
   */
  private static final String CLOCK = "CAST(unixepoch('now', 'subsec') * 1000 AS INTEGER)";

  SqliteDialect(String table, String clockFunction, Set<TestFault> faults) {
    super(table, clockFunction != null ? clockFunction : CLOCK, faults);
  }

  static void checkVersion(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT sqlite_version()")) {
      rs.next();
      String version = rs.getString(1);
      String[] parts = version.split("\\.");
      int major = Integer.parseInt(parts[0]);
      int minor = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
      if (major < 3 || (major == 3 && minor < 42)) {
        throw new LeaseException(
            "SQLite "
                + version
                + " is too old: the lease clock needs"
                + " unixepoch('now','subsec'), SQLite 3.42 or later; use sqlite-jdbc 3.42.0.0 or newer");
      }
    }
  }

  @Override
  public String product() {
    return "SQLite";
  }

  @Override
  public List<String> ddl() {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + table
            + " ("
            + "name TEXT NOT NULL PRIMARY KEY, "
            + "holder TEXT NOT NULL DEFAULT '', "
            + "instance TEXT NOT NULL DEFAULT '', "
            + "term INTEGER NOT NULL DEFAULT 0, "
            + "expires_at_ms INTEGER NOT NULL DEFAULT 0, "
            + "revision INTEGER NOT NULL DEFAULT 0, "
            + "slot_ms INTEGER, "
            + "unfinished_slot_ms INTEGER, "
            + "rerun_slot_ms INTEGER)");
  }

  @Override
  public boolean isMissingTable(SQLException e) {
    String m = e.getMessage();
    return m != null && m.contains("no such table");
  }

  /**
   * Each lease statement is a single autocommit statement; the busy timeout bounds how long it
   * waits for another connection's write lock (a strict holder's transaction, another process's
   * claim). The connection's own busy timeout is put back afterwards: the connection may be a
   * pooled one the application also uses (PooledSessionTest).
   */
  @Override
  public <T> T inLeaseSession(Connection c, long timeoutMs, SqlCall<T> call) throws SQLException {
    long savedBusyTimeout;
    try (Statement s = c.createStatement()) {
      try (ResultSet rs = s.executeQuery("PRAGMA busy_timeout")) {
        savedBusyTimeout = rs.next() ? rs.getLong(1) : 0;
      }
      s.execute("PRAGMA busy_timeout = " + timeoutMs);
    }
    boolean autoCommit = c.getAutoCommit();
    Throwable failure = null;
    try {
      if (!autoCommit) {
        c.setAutoCommit(true);
      }
      return call.call(c);
    } catch (SQLException | RuntimeException | Error e) {
      failure = e;
      throw e;
    } finally {
      restore(
          failure,
          () -> {
            if (!autoCommit) {
              c.setAutoCommit(false);
            }
          },
          () -> {
            try (Statement s = c.createStatement()) {
              s.execute("PRAGMA busy_timeout = " + savedBusyTimeout);
            }
          });
    }
  }

  @Override
  public void createRow(Connection c, String name) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO "
                + table
                + " (name, term) VALUES (?, "
                + startTerm()
                + ") ON CONFLICT (name) DO NOTHING")) {
      ps.setString(1, name);
      ps.executeUpdate();
    }
  }

  /** One UPDATE ... RETURNING, run with executeQuery (sqlite-jdbc refuses executeUpdate on it). */
  @Override
  public Claimed claim(Connection c, String name, String holder, String instance, long leaseMs)
      throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = term + 1,"
            + " expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1"
            + " WHERE name = ? AND expires_at_ms <= "
            + clock
            + " RETURNING term, expires_at_ms";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, holder);
      ps.setString(2, instance);
      ps.setLong(3, leaseMs);
      ps.setString(4, name);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        long expires = rs.getLong(2);
        return new Claimed(rs.getLong(1), expires, expires - leaseMs);
      }
    }
  }

  /**
   * SQLite has no row locks. Plain: a SELECT, run first inside the transaction, fixes its read
   * snapshot; a claim that commits after it makes the transaction's first write fail with
   * SQLITE_BUSY_SNAPSHOT (WAL), so a stale holder's write never lands after the claim. But a
   * deferred transaction that read first cannot wait for the write lock either: under concurrent
   * writers its first write fails at once instead of queueing in the busy handler (measured: 8
   * threads of fenced transactions failed within seconds). Strict: a no-op UPDATE of the lease row,
   * run with executeQuery for its RETURNING, takes the database's write lock as the transaction's
   * first act, so concurrent writers queue behind it as they do behind any writer, and the next
   * term's claim waits for the transaction like on the servers. It changes no value, and an UPDATE
   * leaves {@code last_insert_rowid()} alone.
   */
  @Override
  public String verifySql(boolean strict) {
    if (strict) {
      return "UPDATE "
          + table
          + " SET revision = revision WHERE name = ? AND holder = ?"
          + " AND term = ? AND expires_at_ms > "
          + clock
          + " RETURNING term";
    }
    return "SELECT term FROM "
        + table
        + " WHERE name = ? AND holder = ? AND term = ?"
        + " AND expires_at_ms > "
        + clock;
  }

  // ---- scheduler slots ------------------------------------------------------------------------

  /** {@link Dialect#claimSlot}'s compare-and-set compares the slot columns with this. */
  @Override
  String nullSafeEquals() {
    return "IS";
  }

  /** One UPDATE ... RETURNING, as {@link #claim}. */
  @Override
  public Long claimSlotAgain(
      Connection c,
      String name,
      String holder,
      String instance,
      long leaseMs,
      long instantMs,
      boolean once)
      throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = term + 1,"
            + " expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1,"
            + " rerun_slot_ms = unfinished_slot_ms"
            + " WHERE name = ? AND expires_at_ms <= "
            + clock
            + " AND unfinished_slot_ms = ?"
            + (once ? " AND (rerun_slot_ms IS NULL OR rerun_slot_ms <> unfinished_slot_ms)" : "")
            + " RETURNING term";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, holder);
      ps.setString(2, instance);
      ps.setLong(3, leaseMs);
      ps.setString(4, name);
      ps.setLong(5, instantMs);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : null;
      }
    }
  }
}
