package dev.lease.jdbc.internal.fence;

import dev.lease.core.dialect.Dialect;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A JDBC driver that is a script, for the fence's unit tests ({@link FenceRulesTest}), in the
 * manner of HikariCP's {@code StubConnection} and {@code StubStatement}: a {@link #connection()}
 * whose statements, prepared statements and result sets are JDK dynamic proxies. Every call made on
 * them is recorded ({@link #calls}); what would reach a server is recorded again, in order, as
 * {@link #sent} — the list the tests compare.
 *
 * <p>Entries of {@link #sent}: a statement's SQL text as it was executed (the verify, recognised by
 * its refusal marker, as {@value #VERIFY}); a connection call that talks to the server as {@code
 * setAutoCommit(false)}, {@code commit()}, {@code rollback()}, {@code rollback(savepoint)}, {@code
 * setSavepoint()}, {@code releaseSavepoint()}; a statement's {@code cancel()}. A call that failed
 * ends with {@code " -> "} and its error's message. Calls a driver answers from memory ({@code
 * getAutoCommit}, {@code isReadOnly}, {@code unwrap}, {@code createStatement}, parameter setters,
 * result set reads) are only in {@link #calls}.
 *
 * <p>What it answers (its "server" follows SQLite and sqlite-jdbc, the lease's database in those
 * tests): autocommit on at first; with autocommit off a transaction is always open, so {@code
 * BEGIN} then fails with SQLite's "cannot start a transaction within a transaction"; the verify
 * returns one row (the term it was given), or with {@link #refuseVerify} raises the error SQLite
 * raises for it (its refusal text, error code 1, no SQLState); {@link #failNext} makes a statement
 * fail once; {@code commit()} and {@code rollback()} in autocommit mode fail as sqlite-jdbc's do;
 * any other statement succeeds, counting one row, with an empty result set for a query. Methods no
 * rule here needs answer their return type's default (null, false, 0). The metadata says "SQLite";
 * the fence does not know the driver ({@link DriverSession#UNKNOWN}: it cannot read the session's
 * transaction flag, so the fence assumes only what is safe).
 */
final class StubDriver {

  /** How {@link #sent} shows the verify statement (its text is the lease dialect's). */
  static final String VERIFY = "VERIFY";

  private static final Pattern REFUSAL =
      Pattern.compile(Pattern.quote(Dialect.REFUSAL_MARKER) + " [0-9a-z]+");

  /** Every call, in order: {@code Connection.setAutoCommit(false)}, {@code Statement.close()}. */
  final List<String> calls = new ArrayList<>();

  /** What reached the "server", in order (see the class comment). */
  final List<String> sent = new ArrayList<>();

  boolean autoCommit = true;
  boolean closed;
  private boolean refuseVerify;
  private final Map<String, String> failures = new HashMap<>();
  private final Connection connection = proxy(Connection.class, new StubConnection());

  /** The connection the fence wraps. */
  Connection connection() {
    return connection;
  }

  /** From now on the verify is refused in the "server", as when another holder took the lease. */
  StubDriver refuseVerify() {
    refuseVerify = true;
    return this;
  }

  /** The next execution of exactly {@code sql} fails with {@code message} (a driver's error). */
  StubDriver failNext(String sql, String message) {
    failures.put(sql, message);
    return this;
  }

  /** Forgets what was recorded so far: a test's setup is not part of what it shows. */
  void clear() {
    calls.clear();
    sent.clear();
  }

  // ---- the "server"

  private Object run(StubStatement st, String sql, Method m) throws SQLException {
    boolean verify = sql.contains(Dialect.REFUSAL_MARKER);
    String shown = verify ? VERIFY : sql;
    String failure = failures.remove(sql);
    if (failure == null && sql.trim().toUpperCase(java.util.Locale.ROOT).startsWith("BEGIN")) {
      if (!autoCommit) {
        failure = "cannot start a transaction within a transaction";
      }
    }
    if (verify && refuseVerify) {
      Matcher refusal = REFUSAL.matcher(sql);
      refusal.find();
      // what SQLite raises for the refusing json_extract: error code 1, no SQLState
      String message = "[SQLITE_ERROR] SQL error or missing database (bad JSON path: '";
      sent.add(shown + " -> refused");
      throw new SQLException(message + refusal.group() + ": term 2')", null, 1);
    }
    if (failure != null) {
      sent.add(shown + " -> " + failure);
      throw new SQLException(failure, null, 1);
    }
    sent.add(shown);
    List<Object[]> rows = new ArrayList<>();
    if (verify) {
      rows.add(new Object[] {st.firstLong()});
    }
    st.results = proxy(ResultSet.class, new StubResultSet(st, rows));
    st.updateCount = 1;
    switch (m.getName()) {
      case "executeQuery":
        return st.results;
      case "execute":
        boolean query =
            verify || sql.trim().toUpperCase(java.util.Locale.ROOT).startsWith("SELECT");
        if (!query) {
          st.results = null;
        } else {
          st.updateCount = -1;
        }
        return query;
      case "executeLargeUpdate":
        return 1L;
      default:
        return 1;
    }
  }

  private void serverCall(String call, boolean inTransactionOnly) throws SQLException {
    if (inTransactionOnly && autoCommit) {
      sent.add(call + " -> database in auto-commit mode");
      throw new SQLException("database in auto-commit mode");
    }
    sent.add(call);
  }

  // ---- the proxies

  private <T> T proxy(Class<T> type, InvocationHandler h) {
    return type.cast(
        Proxy.newProxyInstance(StubDriver.class.getClassLoader(), new Class<?>[] {type}, h));
  }

  /** Records the call, answers the Object methods and the wrapper methods, then {@code answer}. */
  private abstract class Stub implements InvocationHandler {
    final String type;

    Stub(String type) {
      this.type = type;
    }

    @Override
    public final Object invoke(Object self, Method m, Object[] args) throws Throwable {
      String name = m.getName();
      switch (name) {
        case "equals":
          return self == args[0];
        case "hashCode":
          return System.identityHashCode(self);
        case "toString":
          return "Stub" + type + "@" + Integer.toHexString(System.identityHashCode(self));
        default:
      }
      calls.add(type + "." + name + "(" + describe(args) + ")");
      switch (name) {
        case "unwrap":
          if (((Class<?>) args[0]).isInstance(self)) {
            return self;
          }
          throw new SQLException("not a wrapper for " + args[0]);
        case "isWrapperFor":
          return ((Class<?>) args[0]).isInstance(self);
        default:
      }
      try {
        return answer(self, m, args == null ? new Object[0] : args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }

    abstract Object answer(Object self, Method m, Object[] args) throws Exception;
  }

  private static String describe(Object[] args) {
    if (args == null) {
      return "";
    }
    return Arrays.stream(args)
        .map(
            a ->
                a instanceof Savepoint
                    ? "savepoint"
                    : a instanceof Class ? ((Class<?>) a).getName() : String.valueOf(a))
        .collect(Collectors.joining(", "));
  }

  /** The default value of a method's return type: what an unscripted method answers. */
  static Object none(Method m) {
    Class<?> t = m.getReturnType();
    if (t == boolean.class) {
      return false;
    }
    if (t == int.class) {
      return 0;
    }
    if (t == long.class) {
      return 0L;
    }
    if (t == short.class) {
      return (short) 0;
    }
    if (t == byte.class) {
      return (byte) 0;
    }
    if (t == double.class) {
      return 0d;
    }
    if (t == float.class) {
      return 0f;
    }
    return null;
  }

  private final class StubConnection extends Stub {
    StubConnection() {
      super("Connection");
    }

    @Override
    Object answer(Object self, Method m, Object[] args) throws SQLException {
      switch (m.getName()) {
        case "createStatement":
          return proxy(Statement.class, new StubStatement("Statement", null));
        case "prepareStatement":
          return proxy(PreparedStatement.class, new StubStatement("PreparedStatement", args[0]));
        case "getAutoCommit":
          return autoCommit;
        case "setAutoCommit":
          boolean on = (Boolean) args[0];
          serverCall("setAutoCommit(" + on + ")", false);
          autoCommit = on;
          return null;
        case "commit":
          serverCall("commit()", true);
          return null;
        case "rollback":
          serverCall(args.length == 0 ? "rollback()" : "rollback(savepoint)", true);
          return null;
        case "setSavepoint":
          serverCall("setSavepoint()", true);
          return proxy(
              Savepoint.class,
              new Stub("Savepoint") {
                @Override
                Object answer(Object sp, Method method, Object[] a) {
                  return method.getName().equals("getSavepointId") ? 1 : none(method);
                }
              });
        case "releaseSavepoint":
          serverCall("releaseSavepoint()", true);
          return null;
        case "isClosed":
          return closed;
        case "close":
          closed = true;
          return null;
        case "isValid":
          return !closed;
        case "getTransactionIsolation":
          return Connection.TRANSACTION_SERIALIZABLE;
        case "getMetaData":
          return proxy(
              DatabaseMetaData.class,
              new Stub("DatabaseMetaData") {
                @Override
                Object answer(Object md, Method method, Object[] a) {
                  switch (method.getName()) {
                    case "getDatabaseProductName":
                      return "SQLite";
                    case "getDatabaseProductVersion":
                      return "3.45.0";
                    case "getURL":
                      return "jdbc:stub:";
                    case "getConnection":
                      return connection;
                    default:
                      return none(method);
                  }
                }
              });
        default:
          return none(m);
      }
    }
  }

  /** A statement, or a prepared statement when it has its {@code sql}. */
  private final class StubStatement extends Stub {
    final String sql;
    final Map<Integer, Object> parameters = new TreeMap<>();
    final List<String> batch = new ArrayList<>();
    ResultSet results;
    int updateCount = -1;
    int fetchSize;
    boolean closed;

    StubStatement(String type, Object sql) {
      super(type);
      this.sql = (String) sql;
    }

    Object firstLong() {
      return parameters.values().stream().filter(v -> v instanceof Long).findFirst().orElse(1L);
    }

    @Override
    Object answer(Object self, Method m, Object[] args) throws SQLException {
      String name = m.getName();
      switch (name) {
        case "execute":
        case "executeQuery":
        case "executeUpdate":
        case "executeLargeUpdate":
          return run(this, args.length > 0 ? (String) args[0] : sql, m);
        case "addBatch":
          batch.add(args.length > 0 ? (String) args[0] : sql);
          return null;
        case "executeBatch":
        case "executeLargeBatch":
          sent.add("batch[" + String.join("; ", batch) + "]");
          int n = batch.size();
          batch.clear();
          return name.equals("executeBatch") ? new int[n] : new long[n];
        case "getResultSet":
          return results;
        case "getUpdateCount":
          int count = updateCount;
          updateCount = -1;
          return count;
        case "getLargeUpdateCount":
          long large = updateCount;
          updateCount = -1;
          return large;
        case "getMoreResults":
          results = null;
          updateCount = -1;
          return false;
        case "getConnection":
          return connection;
        case "getFetchSize":
          return fetchSize;
        case "setFetchSize":
          fetchSize = (Integer) args[0];
          return null;
        case "cancel":
          sent.add("cancel()");
          return null;
        case "close":
          closed = true;
          return null;
        case "isClosed":
          return closed;
        case "clearParameters":
          parameters.clear();
          return null;
        case "getGeneratedKeys":
          return proxy(ResultSet.class, new StubResultSet(this, List.of()));
        default:
          if (name.startsWith("set") && args.length >= 2 && args[0] instanceof Integer) {
            parameters.put((Integer) args[0], args[1]);
            return null;
          }
          return none(m);
      }
    }
  }

  private final class StubResultSet extends Stub {
    final StubStatement statement;
    final List<Object[]> rows;
    int row = -1;
    boolean closed;
    boolean wasNull;

    StubResultSet(StubStatement statement, List<Object[]> rows) {
      super("ResultSet");
      this.statement = statement;
      this.rows = rows;
    }

    @Override
    Object answer(Object self, Method m, Object[] args) throws SQLException {
      String name = m.getName();
      switch (name) {
        case "next":
          row++;
          return row < rows.size();
        case "close":
          closed = true;
          return null;
        case "isClosed":
          return closed;
        case "wasNull":
          return wasNull;
        case "getStatement":
          return null; // the fence's wrapper answers with its own statement
        default:
      }
      if (name.startsWith("get") && args.length == 1 && args[0] instanceof Integer) {
        if (row < 0 || row >= rows.size()) {
          throw new SQLException("no current row");
        }
        Object v = rows.get(row)[(Integer) args[0] - 1];
        wasNull = v == null;
        if (v == null) {
          return none(m);
        }
        if (m.getReturnType() == long.class) {
          return ((Number) v).longValue();
        }
        if (m.getReturnType() == int.class) {
          return ((Number) v).intValue();
        }
        if (m.getReturnType() == String.class) {
          return String.valueOf(v);
        }
        return v;
      }
      return none(m);
    }
  }
}
