package dev.lease.conformance.text;

import dev.lease.conformance.Target;
import dev.lease.conformance.text.RawPathProperty.Effect;
import dev.lease.conformance.text.RawPathProperty.RawWrite;
import dev.lease.conformance.text.RawPathProperty.Route;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Blob;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * What the routes need besides the counter: a sequence (PostgreSQL, MariaDB), a refcursor function
 * and a large object (PostgreSQL); how to reach each route's object and write through it; and the
 * snapshot of everything a write could change.
 */
final class RawObjects implements AutoCloseable {
  final Target target;
  final TextTables tables;
  final String sequence;
  final String cursor;
  final String lobs;
  final SessionMoves moves;

  RawObjects(Target target, TextTables tables, SessionMoves moves) throws SQLException {
    this.target = target;
    this.tables = tables;
    this.moves = moves;
    String seq = null;
    String cur = null;
    String lo = null;
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      if (target.isPostgres()) {
        seq = target.newTable("seq");
        s.execute("CREATE SEQUENCE " + seq);
        cur = target.newTable("cur");
        s.execute(
            "CREATE FUNCTION "
                + cur
                + "() RETURNS refcursor AS $$ DECLARE r refcursor; BEGIN"
                + " OPEN r FOR SELECT 1 AS one; RETURN r; END $$ LANGUAGE plpgsql");
        lo = target.newTable("lo");
        s.execute("CREATE TABLE " + lo + " (id INT PRIMARY KEY, b OID)");
        s.execute("INSERT INTO " + lo + " VALUES (1, lo_from_bytea(0, convert_to('abc', 'UTF8')))");
      } else if (target.isMySqlFamily()) {
        try {
          String name = target.newTable("seq");
          s.execute("CREATE SEQUENCE " + name + " NOCACHE"); // MariaDB; MySQL has none
          seq = name;
        } catch (SQLException e) {
          // MySQL: no sequences, no non-transactional effect of this kind to look for
        }
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
    this.sequence = seq;
    this.cursor = cur;
    this.lobs = lo;
  }

  /** The object a route starts from, reached on {@code c}: a statement, or a large object. */
  Object reach(Connection c, Route route) throws SQLException {
    switch (route) {
      case STATEMENT_CONNECTION:
        return c.createStatement().getConnection().createStatement();
      case RESULT_STATEMENT:
        {
          ResultSet rs = c.createStatement().executeQuery("SELECT 1");
          rs.next();
          return rs.getStatement();
        }
      case METADATA_CONNECTION:
        {
          DatabaseMetaData md = c.getMetaData();
          ResultSet rs = md.getTables(null, null, tables.counter, null);
          Statement s = rs.getStatement();
          return (s != null ? s.getConnection() : md.getConnection()).createStatement();
        }
      case UNWRAP_CONNECTION:
        return c.unwrap(Connection.class).createStatement();
      case DRIVER_CONNECTION:
        return ((Connection) c.unwrap(driverConnection())).createStatement();
      case CREATED_ARRAY:
        return c.createArrayOf("int4", new Integer[] {1}).getResultSet().getStatement();
      case CREATED_ARRAY_CONNECTION:
        return c.createArrayOf("int4", new Integer[] {1})
            .getResultSet()
            .getStatement()
            .getConnection()
            .createStatement();
      case RESULT_ARRAY:
        {
          ResultSet rs = c.createStatement().executeQuery("SELECT ARRAY[1, 2]");
          rs.next();
          Array a = rs.getArray(1);
          return a.getResultSet().getStatement();
        }
      case REFCURSOR:
        return inTransaction(
            c,
            () -> {
              ResultSet rs = c.createStatement().executeQuery("SELECT " + cursor + "()");
              rs.next();
              return ((ResultSet) rs.getObject(1)).getStatement();
            });
      case LARGE_OBJECT:
      default:
        {
          ResultSet rs = c.createStatement().executeQuery("SELECT b FROM " + lobs);
          rs.next();
          return rs.getBlob(1);
        }
    }
  }

  private Class<?> driverConnection() throws SQLException {
    String name =
        target.isPostgres()
            ? "org.postgresql.core.BaseConnection"
            : target.isSqlite()
                ? "org.sqlite.SQLiteConnection"
                : target.label().equals("mariadb")
                    ? "org.mariadb.jdbc.Connection"
                    : "com.mysql.cj.jdbc.JdbcConnection";
    try {
      return Class.forName(name);
    } catch (ClassNotFoundException e) {
      throw new SQLException("no driver connection type " + name, e);
    }
  }

  /** A refcursor lives only in its transaction: read it in one (the connection's own or new). */
  private static Object inTransaction(Connection c, SqlSupplier read) throws SQLException {
    if (!c.getAutoCommit()) {
      return read.get();
    }
    c.setAutoCommit(false);
    try {
      Object o = read.get();
      c.commit();
      return o;
    } finally {
      c.setAutoCommit(true);
    }
  }

  @FunctionalInterface
  interface SqlSupplier {
    Object get() throws SQLException;
  }

  void write(Object reached, RawWrite w) throws SQLException {
    if (reached instanceof Blob) {
      ((Blob) reached).setBytes(1, "X".getBytes(StandardCharsets.UTF_8));
      return;
    }
    Statement s = (Statement) reached;
    if (SessionMoves.replacesTheWrite(w.move())) {
      moves.write(s, w.move(), 50);
    } else if (w.effect() == Effect.SEQUENCE && sequence != null) {
      s.execute(
          target.isPostgres()
              ? "SELECT nextval('" + sequence + "')"
              : "SELECT NEXTVAL(" + sequence + ")");
    } else {
      s.executeUpdate(
          "UPDATE " + moves.counter(w.move()) + " SET n = n + " + w.delta() + " WHERE id = 1");
    }
  }

  /** The counter, the sequence and the large object, committed, as another session sees them. */
  String snapshot() throws SQLException {
    StringBuilder b = new StringBuilder(tables.snapshot()).append(moves.snapshot());
    if (sequence == null && lobs == null) {
      return b.toString();
    }
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      if (sequence != null) {
        try (ResultSet rs =
            s.executeQuery(
                target.isPostgres()
                    ? "SELECT last_value, is_called FROM " + sequence
                    : "SELECT next_not_cached_value FROM " + sequence)) {
          rs.next();
          b.append(", sequence ").append(rs.getString(1));
          if (target.isPostgres()) {
            b.append(rs.getBoolean(2) ? " (called)" : "");
          }
        }
      }
      if (lobs != null) {
        try (ResultSet rs = s.executeQuery("SELECT convert_from(lo_get(b), 'UTF8') FROM " + lobs)) {
          rs.next();
          b.append(", large object ").append(rs.getString(1));
        }
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
    return b.toString();
  }

  @Override
  public void close() {
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      if (lobs != null) {
        s.execute("SELECT lo_unlink(b) FROM " + lobs);
        s.execute("DROP TABLE IF EXISTS " + lobs);
      }
      if (cursor != null) {
        s.execute("DROP FUNCTION IF EXISTS " + cursor + "()");
      }
      if (sequence != null) {
        s.execute("DROP SEQUENCE IF EXISTS " + sequence);
      }
    } catch (SQLException e) {
      // best effort: the runner's final sweep drops the tables of the run
    }
  }
}
