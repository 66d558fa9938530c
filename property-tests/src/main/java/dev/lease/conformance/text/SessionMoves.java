package dev.lease.conformance.text;

import dev.lease.conformance.Target;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * What a session does besides the write itself (issue 35: the fence must not trust the session it
 * guards), generated for the raw-path property: each move is made on the write's own session as an
 * application, a pool's earlier borrower or an attacker would, and the write must still commit
 * nothing stale and leave no effect after a successor's claim.
 */
final class SessionMoves implements AutoCloseable {

  /** One thing the session does. */
  enum Move {
    /** nothing besides the write. */
    NONE,
    /**
     * before the lease is bound, a temporary table named like the lease table, its rows copied from
     * it with their expiry an hour on (a pooled physical connection keeps such a table).
     */
    TEMPORARY_COPY,
    /** before the lease is bound, another schema (PostgreSQL search_path) or database (USE). */
    OTHER_SCHEMA,
    /**
     * PostgreSQL, before the lease is bound: a search_path whose first schema defines an {@code =}
     * on text and on bigint that is always true, ahead of pg_catalog.
     */
    SESSION_OPERATORS,
    /**
     * MySQL/MariaDB: the write is DDL that commits implicitly around itself and whose body runs a
     * while ({@code CREATE TABLE .. AS SELECT SLEEP(..)}); in a takeover round it runs across the
     * successor's claim.
     */
    SLOW_DDL,
    /** MySQL/MariaDB: the write is an {@code INSERT DELAYED} into a MyISAM table. */
    DELAYED_INSERT,
    /**
     * a takeover round's driver connection, unwrapped inside a verified transaction that committed
     * before the pause, written through after it in autocommit mode.
     */
    KEPT_HANDLE
  }

  final Target target;
  final TextTables tables;
  private final String database;
  private final String otherSchema;
  private final String opsSchema;
  private final String delayed;
  private final String ddlPrefix;
  private final List<Move> available = new ArrayList<>();

  SessionMoves(Target target, TextTables tables) throws SQLException {
    this.target = target;
    this.tables = tables;
    String db = null;
    String other = null;
    String ops = null;
    String del = null;
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      available.add(Move.NONE);
      available.add(Move.TEMPORARY_COPY);
      if (target.isPostgres()) {
        other = attempt(s, "CREATE SCHEMA %s", target.newTable("schema"));
        ops = attempt(s, "CREATE SCHEMA %s", target.newTable("ops"));
        if (ops != null) {
          for (String type : new String[] {"text", "bigint"}) {
            s.execute(
                "CREATE FUNCTION "
                    + ops
                    + ".always("
                    + type
                    + ", "
                    + type
                    + ") RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'");
            s.execute(
                "CREATE OPERATOR "
                    + ops
                    + ".= (LEFTARG = "
                    + type
                    + ", RIGHTARG = "
                    + type
                    + ", FUNCTION = "
                    + ops
                    + ".always)");
          }
          available.add(Move.SESSION_OPERATORS);
        }
      } else if (target.isMySqlFamily()) {
        try (ResultSet rs = s.executeQuery("SELECT DATABASE()")) {
          rs.next();
          db = rs.getString(1);
        }
        other = attempt(s, "CREATE DATABASE %s", target.newTable("db"));
        available.add(Move.SLOW_DDL);
        del = attempt(s, "CREATE TABLE %s (n INT) ENGINE=MyISAM", target.newTable("delayed"));
        if (del != null) {
          available.add(Move.DELAYED_INSERT);
        }
      }
      if (other != null) {
        available.add(Move.OTHER_SCHEMA);
      }
      if (!target.isSqlite()) {
        available.add(Move.KEPT_HANDLE);
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
    this.database = db;
    this.otherSchema = other;
    this.opsSchema = ops;
    this.delayed = del;
    this.ddlPrefix = target.newTable("ddl");
  }

  /** {@code name} made with {@code sql} ({@code %s} its name), or null if the user may not. */
  private static String attempt(Statement s, String sql, String name) {
    try {
      s.execute(String.format(sql, name));
      return name;
    } catch (SQLException e) {
      return null;
    }
  }

  /** The moves this target has. */
  List<Move> available() {
    return available;
  }

  /** Makes {@code move} on {@code c} before the lease is bound (the fence passes it through). */
  void prepare(Connection c, Move move) throws SQLException {
    try (Statement s = c.createStatement()) {
      switch (move) {
        case TEMPORARY_COPY:
          // the copy's source resolves to the real table: the temporary one does not exist yet
          s.execute(
              (target.isMySqlFamily() ? "CREATE TEMPORARY TABLE " : "CREATE TEMP TABLE ")
                  + tables.leases
                  + " AS SELECT * FROM "
                  + tables.leases);
          s.execute(
              "UPDATE "
                  + (target.isPostgres() ? "pg_temp." : target.isSqlite() ? "temp." : "")
                  + tables.leases
                  + " SET expires_at_ms = expires_at_ms + 3600000");
          break;
        case OTHER_SCHEMA:
          s.execute(
              target.isPostgres()
                  ? "SET search_path = " + otherSchema + ", public"
                  : "USE " + otherSchema);
          break;
        case SESSION_OPERATORS:
          s.execute("SET search_path = " + opsSchema + ", public, pg_catalog");
          break;
        default:
          break;
      }
    }
    if (!c.getAutoCommit()) {
      c.commit();
    }
  }

  /** The counter table as the write names it after {@code move}. */
  String counter(Move move) {
    return move == Move.OTHER_SCHEMA && database != null
        ? database + "." + tables.counter
        : tables.counter;
  }

  /** Whether {@code move} replaces the write ({@link #write}). */
  static boolean replacesTheWrite(Move move) {
    return move == Move.SLOW_DDL || move == Move.DELAYED_INSERT;
  }

  /** The write {@code move} makes instead of the counter's, on {@code s}. */
  void write(Statement s, Move move, long sleepMillis) throws SQLException {
    if (move == Move.SLOW_DDL) {
      s.execute(
          "CREATE TABLE "
              + target.newTable(ddlPrefix.substring(target.tablePrefix().length()))
              + " AS SELECT SLEEP("
              + sleepMillis / 1000.0
              + ") AS slept");
    } else {
      s.execute("INSERT DELAYED INTO " + delayed + " (n) VALUES (1)");
    }
  }

  /** What the moves' writes may change: stale DDL tables, delayed rows; empty if none. */
  String snapshot() throws SQLException {
    if (!target.isMySqlFamily()) {
      return "";
    }
    StringBuilder b = new StringBuilder();
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      try (ResultSet rs =
          s.executeQuery(
              "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()"
                  + " AND TABLE_NAME LIKE '"
                  + ddlPrefix
                  + "%'")) {
        rs.next();
        b.append(", DDL tables ").append(rs.getLong(1));
      }
      if (delayed != null) {
        try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + delayed)) {
          rs.next();
          b.append(", delayed rows ").append(rs.getLong(1));
        }
      }
    }
    return b.toString();
  }

  @Override
  public void close() {
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      if (target.isMySqlFamily()) {
        List<String> ddl = new ArrayList<>();
        try (ResultSet rs =
            s.executeQuery(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()"
                    + " AND TABLE_NAME LIKE '"
                    + ddlPrefix
                    + "%'")) {
          while (rs.next()) {
            ddl.add(rs.getString(1));
          }
        }
        for (String t : ddl) {
          s.execute("DROP TABLE IF EXISTS " + t);
        }
        if (delayed != null) {
          s.execute("DROP TABLE IF EXISTS " + delayed);
        }
        if (otherSchema != null) {
          s.execute("DROP DATABASE IF EXISTS " + otherSchema);
        }
      } else if (target.isPostgres()) {
        for (String schema : new String[] {otherSchema, opsSchema}) {
          if (schema != null) {
            s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
          }
        }
      }
    } catch (SQLException e) {
      // best effort: the runner's final sweep drops the tables of the run
    }
  }
}
