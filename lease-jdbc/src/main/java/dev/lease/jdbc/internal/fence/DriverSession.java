package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the driver under a fenced connection knows of the server session without a round trip:
 * whether the session is inside a transaction, and (MySQL) the server's autocommit flag. The fence
 * asks it instead of trusting its own picture of the session wherever the server may have changed
 * the session behind the wrapper's back: a BEGIN sent as SQL before the lease was bound, a deadlock
 * that rolled the transaction back, {@code SET autocommit} as SQL.
 *
 * <ul>
 *   <li>pgjdbc: {@code BaseConnection.getTransactionState()}, from every ReadyForQuery: exact.
 *   <li>MySQL Connector/J: {@code ServerSession.inTransactionOnServer()} and {@code
 *       isAutocommit()}, the status flags of the last OK or EOF packet. An error packet carries
 *       none, so after an error they are stale until the next statement succeeds: {@link #refresh}
 *       runs one.
 *   <li>MariaDB Connector/J: {@code Context.getServerStatus()}, the same flags, the same caveat.
 *   <li>sqlite-jdbc exposes nothing of {@code sqlite3_get_autocommit}; the fence finds out by what
 *       BEGIN answers (see {@link TransactionFence}). {@link #repairSqliteAutoCommit} undoes the
 *       half-done {@code setAutoCommit(false)} sqlite-jdbc leaves when its BEGIN fails.
 *   <li>Any other driver: nothing is known, and the fence assumes only what is safe (see {@link
 *       TransactionFence}).
 * </ul>
 *
 * Reached by reflection through {@code unwrap}, so lease-jdbc needs none of the drivers to compile
 * or run; resolved once per connection wrapper, when a lease-bound statement first needs it.
 */
public final class DriverSession {

  private static final Logger log = LoggerFactory.getLogger(DriverSession.class);

  enum Driver {
    PGJDBC,
    CONNECTOR_J,
    MARIADB,
    SQLITE,
    UNKNOWN
  }

  static final DriverSession UNKNOWN = new DriverSession(Driver.UNKNOWN, null, null, null);

  /**
   * A driver option that reconnects or replays silently ({@code transactionReplay=true}), null when
   * none is set: see {@link #silentReplay()}.
   */
  private String silentReplay;

  final Driver driver;
  private final Object target;

  /** The driver's own connection under the pools' proxies; null for an unknown driver. */
  private Connection driverConnection;

  private final Method inTransaction;
  private final Method serverAutoCommit;

  /** MySQL family: the flags may be stale (an error came after the last OK packet). */
  private boolean stale;

  private DriverSession(Driver driver, Object target, Method inTransaction, Method autoCommit) {
    this.driver = driver;
    this.target = target;
    this.inTransaction = inTransaction;
    this.serverAutoCommit = autoCommit;
  }

  /** Finds the driver under {@code delegate} (through any pool proxies); never fails. */
  static DriverSession of(Connection delegate) {
    try {
      Object pg = unwrap(delegate, "org.postgresql.core.BaseConnection");
      if (pg != null) {
        DriverSession d =
            new DriverSession(
                Driver.PGJDBC,
                pg,
                method(pg, "org.postgresql.core.BaseConnection", "getTransactionState"),
                null);
        d.driverConnection = (Connection) pg;
        return d;
      }
      Object my = unwrap(delegate, "com.mysql.cj.MysqlConnection");
      if (my != null) {
        // the session and its server session are looked up on every call: a reconnect
        // (autoReconnect) replaces them
        Object server = connectorJServerSession(my);
        String type = "com.mysql.cj.protocol.ServerSession";
        DriverSession d =
            new DriverSession(
                Driver.CONNECTOR_J,
                my,
                method(server, type, "inTransactionOnServer"),
                method(server, type, "isAutocommit"));
        d.silentReplay = connectorJReconnects(my);
        d.driverConnection = (Connection) my;
        return d;
      }
      Object maria = unwrap(delegate, "org.mariadb.jdbc.Connection");
      if (maria != null) {
        Object context = method(maria, "org.mariadb.jdbc.Connection", "getContext").invoke(maria);
        Method status = method(context, "org.mariadb.jdbc.client.Context", "getServerStatus");
        DriverSession d = new DriverSession(Driver.MARIADB, context, status, status);
        Object conf = method(context, "org.mariadb.jdbc.client.Context", "getConf").invoke(context);
        if (Boolean.TRUE.equals(
            method(conf, "org.mariadb.jdbc.Configuration", "transactionReplay").invoke(conf))) {
          d.silentReplay = "transactionReplay=true";
        }
        d.driverConnection = (Connection) maria;
        return d;
      }
      Object sqlite = unwrap(delegate, "org.sqlite.SQLiteConnection");
      if (sqlite != null) {
        DriverSession d = new DriverSession(Driver.SQLITE, sqlite, null, null);
        d.driverConnection = (Connection) sqlite;
        return d;
      }
    } catch (ReflectiveOperationException | SQLException | RuntimeException | LinkageError e) {
      log.debug("cannot read the driver's session state of {}; assuming nothing", delegate, e);
    }
    return UNKNOWN;
  }

  /**
   * The driver's own connection under the pools' proxies (pgjdbc's {@code BaseConnection}, MySQL
   * Connector/J's {@code MysqlConnection}, MariaDB Connector/J's and sqlite-jdbc's connection
   * classes); null for a driver the fence does not know.
   */
  Connection driverConnection() {
    return driverConnection;
  }

  /**
   * Whether the server session is inside a transaction block, as the driver last heard: TRUE or
   * FALSE, or null when this driver cannot tell (or its flags are stale after an error).
   */
  Boolean inTransaction() {
    if (inTransaction == null || stale) {
      return null;
    }
    try {
      Object v = inTransaction.invoke(stateTarget());
      switch (driver) {
        case PGJDBC:
          return !"IDLE".equals(String.valueOf(v)); // TransactionState: IDLE, OPEN, FAILED
        case MARIADB:
          return (((Number) v).intValue() & 1) != 0; // ServerStatus.IN_TRANSACTION
        default:
          return (Boolean) v;
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      log.debug("could not read the transaction state from {}", driver, e);
      return null;
    }
  }

  /**
   * MySQL Connector/J, MariaDB Connector/J: the server's autocommit flag, which differs from {@code
   * getAutoCommit()} after {@code SET autocommit} ran as SQL (or in a procedure's body); null for
   * other drivers or stale flags. MariaDB Connector/J answers {@code getAutoCommit()} from the flag
   * itself, but a pool's proxy (HikariCP) answers from what was last set through it.
   */
  Boolean serverAutoCommit() {
    if (serverAutoCommit == null || stale) {
      return null;
    }
    try {
      Object v = serverAutoCommit.invoke(stateTarget());
      if (driver == Driver.MARIADB) {
        return (((Number) v).intValue() & 2) != 0; // ServerStatus.AUTOCOMMIT
      }
      return (Boolean) v;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  boolean hasExactState() {
    return driver == Driver.PGJDBC;
  }

  boolean isMySqlFamily() {
    return driver == Driver.CONNECTOR_J || driver == Driver.MARIADB;
  }

  /** A statement failed: the MySQL drivers' flags describe the session before it. */
  void failed() {
    if (isMySqlFamily()) {
      stale = true;
    }
  }

  /**
   * Brings stale MySQL flags up to date with a statement that changes nothing ({@code SELECT 1}
   * starts no transaction), on the caller's connection. A no-op unless an error made them stale.
   */
  void refresh(Connection delegate) throws SQLException {
    if (!stale) {
      return;
    }
    try (java.sql.Statement s = delegate.createStatement()) {
      s.execute("SELECT 1");
    }
    stale = false;
  }

  /**
   * sqlite-jdbc's {@code setAutoCommit(false)} records the new mode before it runs BEGIN, so when
   * BEGIN fails (the session is already inside a transaction begun as SQL) the driver believes it
   * is in manual-commit mode. This puts its flag back without running anything.
   *
   * @return false if the flag could not be reached (the caller must then not go on)
   */
  boolean repairSqliteAutoCommit(boolean autoCommit) {
    if (driver != Driver.SQLITE) {
      return false;
    }
    try {
      Object config = target.getClass().getMethod("getConnectionConfig").invoke(target);
      config.getClass().getMethod("setAutoCommit", boolean.class).invoke(config, autoCommit);
      return true;
    } catch (ReflectiveOperationException | RuntimeException e) {
      log.warn("could not repair sqlite-jdbc's autocommit flag", e);
      return false;
    }
  }

  /**
   * The driver option under this connection that reconnects and goes on (or replays the open
   * transaction) without telling the application, or null: MariaDB Connector/J {@code
   * transactionReplay=true}, MySQL Connector/J {@code autoReconnect=true} or {@code
   * autoReconnectForPools=true}. pgjdbc and sqlite-jdbc have none. The fence refuses to run a
   * lease-bound statement on such a connection ({@link #refuseSilentReplay}).
   */
  String silentReplay() {
    return silentReplay;
  }

  private static String connectorJReconnects(Object connection) {
    try {
      Object props =
          method(connection, "com.mysql.cj.jdbc.JdbcConnection", "getPropertySet")
              .invoke(connection);
      Class<?> type =
          Class.forName("com.mysql.cj.conf.PropertySet", false, props.getClass().getClassLoader());
      Method get = type.getMethod("getBooleanProperty", String.class);
      for (String option : new String[] {"autoReconnect", "autoReconnectForPools"}) {
        Object property = get.invoke(props, option);
        Object value = property.getClass().getMethod("getValue").invoke(property);
        if (Boolean.TRUE.equals(value)) {
          return option + "=true";
        }
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      log.debug("cannot read Connector/J's reconnect options", e);
    }
    return null;
  }

  private static Object connectorJServerSession(Object connection)
      throws ReflectiveOperationException {
    Object session =
        method(connection, "com.mysql.cj.MysqlConnection", "getSession").invoke(connection);
    return method(session, "com.mysql.cj.Session", "getServerSession").invoke(session);
  }

  /** The object the state methods are called on. */
  private Object stateTarget() throws ReflectiveOperationException {
    return driver == Driver.CONNECTOR_J ? connectorJServerSession(target) : target;
  }

  private static Object unwrap(Connection delegate, String className) throws SQLException {
    Class<?> type = load(className, delegate);
    if (type == null) {
      return null;
    }
    if (type.isInstance(delegate)) {
      return delegate;
    }
    return delegate.isWrapperFor(type) ? delegate.unwrap(type) : null;
  }

  /** Methods by declaring type and name, per class of the object they are called on. */
  private static final ClassValue<Map<String, Method>> METHODS =
      new ClassValue<>() {
        @Override
        protected Map<String, Method> computeValue(Class<?> type) {
          return new ConcurrentHashMap<>();
        }
      };

  /**
   * Driver classes by name as seen from a connection class (absent: not on its class path), so that
   * a lookup that fails (an exception) happens once per connection class, not per borrow.
   */
  private static final ClassValue<Map<String, Optional<Class<?>>>> CLASSES =
      new ClassValue<>() {
        @Override
        protected Map<String, Optional<Class<?>>> computeValue(Class<?> type) {
          return new ConcurrentHashMap<>();
        }
      };

  private static Method method(Object target, String declaringType, String name)
      throws ReflectiveOperationException {
    Map<String, Method> cache = METHODS.get(target.getClass());
    String key = declaringType + '#' + name;
    Method m = cache.get(key);
    if (m == null) {
      Class<?> type = Class.forName(declaringType, false, target.getClass().getClassLoader());
      m = type.getMethod(name);
      cache.put(key, m);
    }
    return m;
  }

  /** The driver class as the connection's class loader sees it, then ours and the thread's. */
  private static Class<?> load(String name, Connection delegate) {
    return CLASSES
        .get(delegate.getClass())
        .computeIfAbsent(name, n -> Optional.ofNullable(find(n, delegate)))
        .orElse(null);
  }

  private static Class<?> find(String name, Connection delegate) {
    for (ClassLoader loader :
        new ClassLoader[] {
          delegate.getClass().getClassLoader(),
          Thread.currentThread().getContextClassLoader(),
          DriverSession.class.getClassLoader()
        }) {
      if (loader == null) {
        continue;
      }
      try {
        return Class.forName(name, false, loader);
      } catch (ClassNotFoundException | LinkageError e) {
        // not visible from this loader
      }
    }
    return null;
  }

  /**
   * Refuses a connection whose driver reconnects or replays silently ({@code option}, null: none).
   * A replayed transaction runs its verify again on the new session, and the server refuses it
   * there when the lease is gone, so the replay cannot commit a stale write; but the application
   * was never told its session died, locks it held were gone meanwhile, and a driver that
   * reconnects without replaying runs the rest of the transaction in autocommit. Fencing needs a
   * failure the application sees.
   */
  public static void refuseSilentReplay(String option, Lease lease) throws SQLException {
    if (option == null) {
      return;
    }
    throw new SQLException(
        "refused a fenced connection with the driver option "
            + option
            + (lease == null ? "" : " under " + lease)
            + ": it reconnects (and replays the open transaction) without telling the"
            + " application, which fencing cannot allow; remove the option (let the pool replace"
            + " broken connections and the application retry the transaction)",
        "08004");
  }

  /** Driver options that reconnect, or replay an open transaction, without telling the caller. */
  private static final String[] SILENT_REPLAY = {
    "transactionReplay", "autoReconnect", "autoReconnectForPools"
  };

  /**
   * The first option of {@link #SILENT_REPLAY} set to true in the URL's query or in {@code info},
   * as {@code name=true}; null if none is.
   */
  public static String silentReplayOption(String url, Properties info) {
    for (String option : SILENT_REPLAY) {
      if (info != null
          && "true".equalsIgnoreCase(String.valueOf(info.getProperty(option)).trim())) {
        return option + "=true";
      }
      int q = url.indexOf('?');
      if (q < 0) {
        continue;
      }
      for (String pair : url.substring(q + 1).split("[&;]")) {
        int eq = pair.indexOf('=');
        if (eq > 0
            && pair.substring(0, eq).trim().equalsIgnoreCase(option)
            && "true".equalsIgnoreCase(pair.substring(eq + 1).trim())) {
          return option + "=true";
        }
      }
    }
    return null;
  }
}
