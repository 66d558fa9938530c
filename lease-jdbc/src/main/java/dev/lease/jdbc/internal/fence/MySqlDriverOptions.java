package dev.lease.jdbc.internal.fence;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the user's MySQL-family driver was configured with, read from the driver's own configuration
 * through {@code unwrap} (never changed): whether a text of several statements reaches the server
 * as one ({@code allowMultiQueries=true}), and whether prepared statements are prepared on the
 * server ({@code useServerPrepStmts=true}, which cannot prepare such a text). MySQL Connector/J
 * (8.0 and later, tested with 9.5): {@code
 * JdbcConnection.getPropertySet().getBooleanProperty(name).getValue()}; MariaDB Connector/J (3.x,
 * tested with 3.5): {@code Connection.getContext().getConf().allowMultiQueries()}. Any other
 * driver, or one whose configuration cannot be read, answers no, and the verify stays a statement
 * of its own ({@link Piggyback}).
 *
 * @param multiQueries the driver sends a text of several statements as one, and the server runs
 *     them one after the other in the open transaction
 * @param serverPrepares prepared statements are prepared on the server (a text of several
 *     statements then cannot carry the verify)
 */
record MySqlDriverOptions(boolean multiQueries, boolean serverPrepares) {

  private static final Logger log = LoggerFactory.getLogger(FenceContext.LOGGER);

  static final MySqlDriverOptions NONE = new MySqlDriverOptions(false, false);

  /** Physical connection to its driver's options (weak keys: checklist 28). */
  private static final Map<Connection, MySqlDriverOptions> CACHE =
      Collections.synchronizedMap(new WeakHashMap<>());

  /**
   * {@code delegate}'s driver configuration, read once per physical connection (reached through a
   * pool's {@code unwrap(Connection.class)}); {@link #NONE} when it cannot be read.
   */
  static MySqlDriverOptions of(Connection delegate) {
    Connection physical = physical(delegate);
    MySqlDriverOptions o = CACHE.get(physical);
    if (o == null) {
      o = read(delegate, physical);
      CACHE.put(physical, o);
    }
    return o;
  }

  private static MySqlDriverOptions read(Connection delegate, Connection physical) {
    try {
      MySqlDriverOptions o = connectorJ(delegate, physical);
      if (o == null) {
        o = mariadb(delegate, physical);
      }
      return o == null ? NONE : o;
    } catch (ReflectiveOperationException | SQLException | RuntimeException | LinkageError e) {
      log.debug("cannot read the MySQL driver's configuration; the verify is sent on its own", e);
      return NONE;
    }
  }

  /** MySQL Connector/J: {@code com.mysql.cj.jdbc.JdbcConnection}'s property set. */
  private static MySqlDriverOptions connectorJ(Connection delegate, Connection physical)
      throws ReflectiveOperationException, SQLException {
    Class<?> type = driverClass(physical, "com.mysql.cj.jdbc.JdbcConnection");
    if (type == null || !delegate.isWrapperFor(type)) {
      return null;
    }
    Object connection = delegate.unwrap(type);
    Object properties = type.getMethod("getPropertySet").invoke(connection);
    ClassLoader loader = type.getClassLoader();
    Method property =
        Class.forName("com.mysql.cj.conf.PropertySet", false, loader)
            .getMethod("getBooleanProperty", String.class);
    Method value =
        Class.forName("com.mysql.cj.conf.RuntimeProperty", false, loader).getMethod("getValue");
    return new MySqlDriverOptions(
        Boolean.TRUE.equals(value.invoke(property.invoke(properties, "allowMultiQueries"))),
        Boolean.TRUE.equals(value.invoke(property.invoke(properties, "useServerPrepStmts"))));
  }

  /** MariaDB Connector/J 3: {@code org.mariadb.jdbc.Connection}'s configuration. */
  private static MySqlDriverOptions mariadb(Connection delegate, Connection physical)
      throws ReflectiveOperationException, SQLException {
    Class<?> type = driverClass(physical, "org.mariadb.jdbc.Connection");
    if (type == null || !delegate.isWrapperFor(type)) {
      return null;
    }
    Object connection = delegate.unwrap(type);
    Object context = type.getMethod("getContext").invoke(connection);
    ClassLoader loader = type.getClassLoader();
    Object conf =
        Class.forName("org.mariadb.jdbc.client.Context", false, loader)
            .getMethod("getConf")
            .invoke(context);
    Class<?> confType = Class.forName("org.mariadb.jdbc.Configuration", false, loader);
    return new MySqlDriverOptions(
        Boolean.TRUE.equals(confType.getMethod("allowMultiQueries").invoke(conf)),
        Boolean.TRUE.equals(confType.getMethod("useServerPrepStmts").invoke(conf)));
  }

  /**
   * The driver's class named {@code name}, from the class loader of the driver's own connection
   * {@code physical}, or null when that driver is not the one in use.
   */
  private static Class<?> driverClass(Connection physical, String name) {
    Class<?> own = physical.getClass();
    String prefix = name.substring(0, name.indexOf(".jdbc.") + 1);
    if (!own.getName().startsWith(prefix) && !Proxy.isProxyClass(own)) {
      return null;
    }
    try {
      return Class.forName(name, false, own.getClassLoader());
    } catch (ClassNotFoundException e) {
      return null;
    }
  }

  /** The driver's connection behind a pool's proxy ({@code unwrap(Connection.class)}). */
  static Connection physical(Connection c) {
    try {
      Connection inner = c.unwrap(Connection.class);
      return inner != null ? inner : c;
    } catch (SQLException | RuntimeException e) {
      return c;
    }
  }
}
