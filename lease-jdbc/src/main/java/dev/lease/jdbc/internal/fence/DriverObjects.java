package dev.lease.jdbc.internal.fence;

import java.sql.Array;
import java.sql.Blob;
import java.sql.CallableStatement;
import java.sql.Clob;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.NClob;
import java.sql.ParameterMetaData;
import java.sql.PreparedStatement;
import java.sql.Ref;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.RowId;
import java.sql.SQLException;
import java.sql.SQLXML;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Struct;
import java.sql.Wrapper;
import java.util.Map;

/**
 * No raw driver object leaves the wrapper (issue 25, items 1 and 2). Every JDBC object a fenced
 * connection hands out, however deep (a result set's {@code getArray}, that array's {@code
 * getResultSet()}, its {@code getStatement()}, a refcursor read with {@code getObject}, a large
 * object), is one of ours: its back-pointers lead to the fenced statement and connection, and its
 * own writes ({@code Blob.setBytes} on a PostgreSQL large object, a Connector/J locator blob) run
 * through the fence like a statement, after the transaction's verify. pgjdbc's {@code
 * PgArray.getResultSet()} is a driver result set on a fresh {@code PgStatement}: through it every
 * statement reached the server past the fence and the fenced {@code commit()} committed it.
 *
 * <p>The generated delegates call {@link #wrap} for every value a getter returns that may be such
 * an object (the declared types in {@link #WRAPPED}, and {@code Object}), and {@link
 * FencedObject#raw} for every parameter that may carry one of our wrappers back to the driver,
 * which expects its own ({@code setArray}, {@code updateBlob}, {@code createArrayOf}'s elements).
 */
final class DriverObjects {

  private DriverObjects() {}

  /**
   * The java.sql interfaces a fenced connection hands out as wrappers: each can reach the database,
   * directly or through an object it returns.
   */
  static final Map<Class<?>, String> WRAPPED =
      Map.ofEntries(
          Map.entry(Connection.class, "FencingConnection"),
          Map.entry(Statement.class, "FencingStatement"),
          Map.entry(PreparedStatement.class, "FencingPreparedStatement"),
          Map.entry(CallableStatement.class, "FencingCallableStatement"),
          Map.entry(ResultSet.class, "FencingResultSet"),
          Map.entry(DatabaseMetaData.class, "FencingDatabaseMetaData"),
          Map.entry(Array.class, "FencingArray: result sets fenced, elements wrapped"),
          Map.entry(Blob.class, "FencingBlob: writes fenced"),
          Map.entry(Clob.class, "FencingClob: writes fenced"),
          Map.entry(NClob.class, "FencingClob.N: writes fenced"),
          Map.entry(Ref.class, "FencingRef: setObject fenced, getObject wrapped"),
          Map.entry(Struct.class, "FencingStruct: attributes wrapped"));

  /**
   * The java.sql interfaces reachable from a connection that are handed out as the driver's: none
   * of their methods reaches the database or returns an object that does.
   */
  static final Map<Class<?>, String> VALUES =
      Map.of(
          ResultSetMetaData.class, "describes columns; no back-pointer",
          ParameterMetaData.class, "describes parameters; no back-pointer",
          Savepoint.class, "a name and an id; used only through the fenced connection",
          RowId.class, "a value",
          SQLXML.class,
              "a client-side value in every supported driver (pgjdbc keeps it in memory until"
                  + " setSQLXML); no method reaches the database",
          Wrapper.class, "the unwrap contract, checked on each wrapper");

  /** {@code value} with every driver object it is or holds wrapped for {@code connection}. */
  static Object wrap(ParentConnection connection, Object value) {
    if (value == null || value instanceof FencedObject || !connection.wrapsDriverObjects()) {
      return value;
    }
    if (value instanceof ResultSet) {
      return new FencingResultSet(connection, null, (ResultSet) value);
    }
    if (value instanceof Array) {
      return new FencingArray(connection, (Array) value);
    }
    if (value instanceof NClob) {
      return new FencingClob.N(connection, (NClob) value);
    }
    if (value instanceof Clob) {
      return new FencingClob(connection, (Clob) value);
    }
    if (value instanceof Blob) {
      return new FencingBlob(connection, (Blob) value);
    }
    if (value instanceof Ref) {
      return new FencingRef(connection, (Ref) value);
    }
    if (value instanceof Struct) {
      return new FencingStruct(connection, (Struct) value);
    }
    if (value instanceof Statement || value instanceof Connection) {
      // no supported driver returns one as a column value; if one did, it would run SQL unfenced
      throw new IllegalStateException(
          "the driver returned its own "
              + value.getClass().getName()
              + " as a value; lease-jdbc cannot fence it");
    }
    if (value instanceof Object[]) {
      return wrapElements(connection, (Object[]) value);
    }
    return value;
  }

  /**
   * For {@code getObject(.., Class<T>)}: the wrapper when it is a {@code T}; a vendor type the
   * wrapper does not implement is handed out as {@code unwrap} would hand it out (after the
   * transaction's verify; never a driver statement or connection in autocommit).
   */
  static <T> T wrap(ParentConnection connection, T value, Class<T> type) throws SQLException {
    Object w = wrap(connection, value);
    if (w == value || type.isInstance(w)) {
      return type.cast(w);
    }
    connection.fence().beforeUnwrap(type);
    return value;
  }

  /** A Java array of elements (Array.getArray, Struct.getAttributes) with its elements wrapped. */
  private static Object[] wrapElements(ParentConnection connection, Object[] values) {
    Object[] out = values;
    for (int i = 0; i < values.length; i++) {
      Object w = wrap(connection, values[i]);
      if (w != values[i]) {
        out = copyFor(out, values, w);
        out[i] = w;
      }
    }
    return out;
  }

  /** {@code out} if it can take {@code element}, else a copy of {@code original} that can. */
  private static Object[] copyFor(Object[] out, Object[] original, Object element) {
    if (out != original && out.getClass().getComponentType().isInstance(element)) {
      return out;
    }
    Class<?> component = out.getClass().getComponentType();
    Object[] copy =
        component.isInstance(element)
            ? out.clone()
            : java.util.Arrays.copyOf(out, out.length, Object[].class);
    return copy;
  }
}
