package dev.lease.conformance.sim;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One physical connection of a simulated process, as lease-core and lease-jdbc see it. Its
 * statements go through {@link SimWorld#execute}, where the process's faults delay or time them
 * out, where they wait for SQLite's locks in virtual time, and where a loss's cancel reaches them.
 * The run's mutations (negative controls) rewrite the SQL of lease-core and drop lease-jdbc's
 * rollbacks here. Closing gives the connection back to the process's pool without a rollback, as a
 * pool that does not roll back on return would: lease-jdbc must roll back what it verified.
 */
final class SimConnection implements InvocationHandler {

  /** The busy timeout an application's connection URL would set; lease statements set their own. */
  static final long DEFAULT_BUSY_TIMEOUT_MS = 1_000;

  private static final Pattern SET_BUSY_TIMEOUT =
      Pattern.compile("\\s*PRAGMA\\s+busy_timeout\\s*=\\s*(\\d+)\\s*", Pattern.CASE_INSENSITIVE);
  private static final Pattern GET_BUSY_TIMEOUT =
      Pattern.compile("\\s*PRAGMA\\s+busy_timeout\\s*", Pattern.CASE_INSENSITIVE);

  /** Thrown for every setNetworkTimeout (lease-core tries it twice per statement): made once. */
  private static final SQLFeatureNotSupportedException NO_NETWORK =
      new SQLFeatureNotSupportedException("no network in the simulation");

  final SimProcess process;
  final Connection physical;
  final Connection proxy;

  /** SQLite's busy timeout of this connection, served in virtual time. */
  long busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS;

  /** lease-core's verify ran in the open transaction: lease-jdbc now cancels on a loss. */
  boolean verified;

  /** Which verified transaction this is (SimWorld numbers them as their verify runs). */
  long verifiedSerial;

  /** The physical connection is gone (the process crashed). */
  boolean broken;

  SimConnection(SimProcess process, Connection physical) {
    this.process = process;
    this.physical = physical;
    this.proxy =
        (Connection)
            Proxy.newProxyInstance(
                Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, this);
  }

  /** Closes the physical connection: SQLite rolls back its open transaction. */
  void closePhysical() {
    broken = true;
    verified = false;
    try {
      physical.close();
    } catch (SQLException e) {
      // already closed
    }
  }

  @Override
  public Object invoke(Object self, Method m, Object[] args) throws Throwable {
    SimWorld world = process.world;
    switch (m.getName()) {
      case "equals":
        return self == args[0];
      case "hashCode":
        return System.identityHashCode(self);
      case "toString":
        return process + " connection";
      case "close":
        process.giveBack(this);
        return null;
      case "isClosed":
        return broken || physical.isClosed();
      case "setNetworkTimeout":
        throw NO_NETWORK;
      case "rollback":
        if (args == null) {
          if (world.mutations.losesRollback()) {
            return null;
          }
          verified = false;
        }
        return call(m, args);
      case "commit":
        verified = false;
        return call(m, args);
      case "setAutoCommit":
        if ((Boolean) args[0]) {
          verified = false;
        }
        return call(m, args);
      case "isWrapperFor":
        // no unwrapping to sqlite-jdbc's connection: lease-core then bounds its steps with PRAGMA
        // busy_timeout, which this connection serves in virtual time (sqlite-jdbc's own
        // setBusyTimeout would make SQLite wait in real time, stopping the simulation's clock)
        return false;
      case "unwrap":
        throw new SQLException("a simulated connection does not unwrap");
      case "createStatement":
        return statement((Statement) call(m, args), null, Statement.class);
      case "prepareStatement":
        args[0] = world.mutations.sql((String) args[0]);
        return statement((Statement) call(m, args), (String) args[0], PreparedStatement.class);
      default:
        return call(m, args);
    }
  }

  private Object call(Method m, Object[] args) throws Throwable {
    if (broken) {
      throw new SQLException("the connection is gone: its process crashed (simulated)", "08003");
    }
    return reflect(physical, m, args);
  }

  static Object reflect(Object target, Method m, Object[] args) throws Throwable {
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private Object statement(Statement physicalStatement, String sql, Class<?> type) {
    return Proxy.newProxyInstance(
        type.getClassLoader(), new Class<?>[] {type}, new Stmt(physicalStatement, sql));
  }

  /** A statement of this connection. */
  final class Stmt implements InvocationHandler {
    final Statement physical;
    final String sql;
    final CountDownLatch cancelled = new CountDownLatch(1);

    /** The database clock when this statement last ran ({@link Long#MIN_VALUE}: not yet). */
    long dbNowMs = Long.MIN_VALUE;

    /** The text bound to parameter 1 (an adopt's new holder), or null. */
    String firstParameter;

    Stmt(Statement physical, String sql) {
      this.physical = physical;
      this.sql = sql;
    }

    boolean isCancelled() {
      return cancelled.getCount() == 0;
    }

    SimConnection connection() {
      return SimConnection.this;
    }

    @Override
    public Object invoke(Object self, Method m, Object[] args) throws Throwable {
      String name = m.getName();
      switch (name) {
        case "equals":
          return self == args[0];
        case "hashCode":
          return System.identityHashCode(self);
        case "toString":
          return process + " statement " + (sql == null ? "" : sql);
        case "cancel":
          // lease-jdbc cancels from another thread on a loss; the simulation's thread sees it
          cancelled.countDown();
          return null;
        case "getConnection":
          return proxy;
        case "close":
          {
            Object closed = call(m, args);
            // an autocommit statement has committed now: the world looks at what it wrote
            process.world.statementClosed(this);
            return closed;
          }
        default:
          break;
      }
      if ((name.equals("setString") || name.equals("setObject"))
          && args.length >= 2
          && Integer.valueOf(1).equals(args[0])
          && args[1] instanceof String value) {
        firstParameter = value;
      }
      String text = sql;
      if (args != null && args.length > 0 && args[0] instanceof String s) {
        Matcher set = SET_BUSY_TIMEOUT.matcher(s);
        if (name.startsWith("execute") && set.matches()) {
          // lease-core sets what is left of its attempt timeout, which it measures in real time
          // (System.nanoTime): in virtual time all of it is left, and the run stays replayable
          long value = Long.parseLong(set.group(1));
          long attempt = process.world.timings.attemptTimeout().toMillis();
          busyTimeoutMs = value <= attempt ? attempt : value;
          return switch (name) {
            case "execute" -> false;
            case "executeUpdate" -> 0;
            case "executeLargeUpdate" -> 0L;
            default -> throw new SQLException("PRAGMA busy_timeout = N returns no result set");
          };
        }
        if (name.equals("executeQuery") && GET_BUSY_TIMEOUT.matcher(s).matches()) {
          args[0] = "SELECT " + busyTimeoutMs;
        } else if (name.startsWith("execute") || name.equals("addBatch")) {
          args[0] = process.world.mutations.sql(s);
        }
        text = (String) args[0];
      }
      if (name.startsWith("execute")) {
        return process.world.execute(this, text == null ? "" : text, () -> call(m, args));
      }
      return call(m, args);
    }

    private Object call(Method m, Object[] args) throws Throwable {
      if (broken) {
        throw new SQLException("the connection is gone: its process crashed (simulated)", "08003");
      }
      return SimConnection.reflect(physical, m, args);
    }
  }
}
