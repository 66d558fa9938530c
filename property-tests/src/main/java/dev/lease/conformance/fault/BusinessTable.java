package dev.lease.conformance.fault;

import dev.lease.conformance.Target;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;

/**
 * The business data of a fault run: each transaction writes a fixed number of rows tagged with the
 * transaction id and the term it verified; afterwards every transaction must be there whole or not
 * at all.
 */
final class BusinessTable {

  private BusinessTable() {}

  static void create(Target target, String table) throws SQLException {
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE "
              + table
              + " (txn BIGINT NOT NULL, part INTEGER NOT NULL,"
              + " term BIGINT NOT NULL, PRIMARY KEY (txn, part))");
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }

  static void insert(Connection c, String table, long txn, int part, long term)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("INSERT INTO " + table + " (txn, part, term) VALUES (?, ?, ?)")) {
      ps.setLong(1, txn);
      ps.setInt(2, part);
      ps.setLong(3, term);
      ps.executeUpdate();
    }
  }

  /** txn → rows in the table. */
  static Map<Long, Long> rows(Target target, String table) throws SQLException {
    Map<Long, Long> rows = new HashMap<>();
    try (Connection c = target.connect();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT txn, count(*) FROM " + table + " GROUP BY txn")) {
      while (rs.next()) {
        rows.put(rs.getLong(1), rs.getLong(2));
      }
    }
    return rows;
  }

  /**
   * True when {@code e} (or a cause) says a statement waited and gave up: the database's lock wait
   * (SQLite's busy handler, InnoDB's lock wait timeout, PostgreSQL's lock or statement timeout) or
   * lease-core's attempt timeout, which bounds the whole attempt and so usually ends a lock wait
   * first.
   */
  static boolean isLockWait(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      String m = t.getMessage() == null ? "" : t.getMessage().toLowerCase(java.util.Locale.ROOT);
      if (m.contains("sqlite_busy")
          || m.contains("database is locked")
          || m.contains("lock wait timeout")
          || m.contains("lock timeout")
          || m.contains("statement timeout")
          || m.contains("within the attempt timeout")) {
        return true;
      }
    }
    return false;
  }

  /**
   * The lease row's term as this transaction sees it (a plain read, no lock) and the database clock
   * now, UTC epoch milliseconds: {term, time}.
   */
  static long[] observedTermAndTime(Connection c, Target target, String leaseTable, String name)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT term, " + clock(target) + " FROM " + leaseTable + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? new long[] {rs.getLong(1), rs.getLong(2)} : new long[] {-1, -1};
      }
    }
  }

  /**
   * The database server's clock in epoch milliseconds, the expressions lease-core uses:
   * PostgreSQL's clock_timestamp() (not now(), the transaction's start), UTC_TIMESTAMP(6) on
   * MySQL/MariaDB (free of the session time zone), unixepoch with subsec on SQLite 3.42+.
   */
  static String clock(Target target) {
    if (target.isPostgres()) {
      return "(floor(extract(epoch from clock_timestamp()) * 1000))::bigint";
    }
    if (target.isMySqlFamily()) {
      return "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";
    }
    return "CAST(unixepoch('now', 'subsec') * 1000 AS INTEGER)";
  }

  /** The server's id of this session, for killing it from an admin session; 0 on SQLite. */
  static long sessionId(Connection c, Target target) throws SQLException {
    String sql =
        target.isPostgres()
            ? "SELECT pg_backend_pid()"
            : target.isMySqlFamily() ? "SELECT CONNECTION_ID()" : "SELECT 0";
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Ends session {@code id} from an admin connection: {@code pg_terminate_backend} on PostgreSQL,
   * {@code KILL} on MySQL/MariaDB (the id is the server's number, not user input).
   */
  static void kill(Connection admin, Target target, long id) throws SQLException {
    if (target.isPostgres()) {
      try (PreparedStatement ps = admin.prepareStatement("SELECT pg_terminate_backend(?)")) {
        ps.setInt(1, (int) id);
        ps.executeQuery().close();
      }
    } else if (target.isMySqlFamily()) {
      try (Statement s = admin.createStatement()) {
        s.execute("KILL " + id);
      }
    }
  }
}
