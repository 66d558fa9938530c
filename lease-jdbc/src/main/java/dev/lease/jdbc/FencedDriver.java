package dev.lease.jdbc;

import dev.lease.jdbc.internal.fence.DriverSession;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.DriverPropertyInfo;
import java.sql.SQLException;
import java.util.Enumeration;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Logger;

/**
 * The {@code jdbc:fenced:} driver: {@code jdbc:fenced:postgresql://host/db} (or, equivalently,
 * {@code jdbc:fenced:jdbc:postgresql://host/db}) connects through the driver of {@code
 * jdbc:postgresql://host/db} and fences the connection like {@link FencedDataSource}. Usable from
 * {@link DriverManager} and as HikariCP's {@code jdbcUrl} (then set {@code driverClassName} to
 * {@code dev.lease.jdbc.FencedDriver} or leave it unset: Hikari checks {@code acceptsURL}).
 *
 * <p>Registered with {@link DriverManager} when the class loads and through {@code
 * META-INF/services/java.sql.Driver}. The real driver is found among {@link #addDriverCandidate
 * candidates} first, then {@link DriverManager#getDrivers()}, which only lists drivers visible to
 * this class's class loader (p6spy #388); this driver never picks itself. Connections use {@link
 * #defaultOptions()}.
 */
public final class FencedDriver implements Driver {

  /** The URL prefix this driver accepts. */
  public static final String PREFIX = "jdbc:fenced:";

  private static final FencedDriver INSTANCE = new FencedDriver();
  private static final List<Driver> CANDIDATES = new CopyOnWriteArrayList<>();
  private static volatile FencingOptions options = FencingOptions.defaults();
  private static boolean registered;

  static {
    register();
  }

  /** Registers the driver with {@link DriverManager}; idempotent. */
  public static synchronized void register() {
    if (registered) {
      return;
    }
    try {
      DriverManager.registerDriver(INSTANCE);
      registered = true;
    } catch (SQLException e) {
      throw new IllegalStateException("could not register " + FencedDriver.class.getName(), e);
    }
  }

  /** Removes the driver from {@link DriverManager}; idempotent. */
  public static synchronized void deregister() {
    if (!registered) {
      return;
    }
    try {
      DriverManager.deregisterDriver(INSTANCE);
    } catch (SQLException e) {
      throw new IllegalStateException("could not deregister " + FencedDriver.class.getName(), e);
    }
    registered = false;
  }

  public static synchronized boolean isRegistered() {
    return registered;
  }

  /** Sets the options of connections made from now on. */
  public static void setDefaultOptions(FencingOptions fencingOptions) {
    options = Objects.requireNonNull(fencingOptions, "options");
  }

  public static FencingOptions defaultOptions() {
    return options;
  }

  /**
   * Tries {@code driver} before the drivers {@link DriverManager} lists: for class loaders that
   * hide the real driver from this class (application servers, native images).
   */
  public static void addDriverCandidate(Driver driver) {
    if (!(driver instanceof FencedDriver)) {
      CANDIDATES.add(Objects.requireNonNull(driver, "driver"));
    }
  }

  /**
   * The URL of the real driver: the prefix stripped once, at the start (p6spy's replace-all removed
   * every occurrence).
   */
  static String realUrl(String url) {
    String rest = url.substring(PREFIX.length());
    return rest.startsWith("jdbc:") ? rest : "jdbc:" + rest;
  }

  @Override
  public Connection connect(String url, Properties info) throws SQLException {
    if (!acceptsURL(url)) {
      return null; // the Driver contract: not ours (p6spy PR #72)
    }
    String real = realUrl(url);
    DriverSession.refuseSilentReplay(DriverSession.silentReplayOption(real, info), null);
    Connection c = findDriver(real).connect(real, info);
    if (c == null) {
      throw new SQLException("the driver for " + real + " returned no connection", "08001");
    }
    return FencedConnections.wrapOpenedByUrl(c, options);
  }

  @Override
  public boolean acceptsURL(String url) {
    return url != null && url.startsWith(PREFIX);
  }

  @Override
  public DriverPropertyInfo[] getPropertyInfo(String url, Properties info) throws SQLException {
    if (!acceptsURL(url)) {
      return new DriverPropertyInfo[0];
    }
    String real = realUrl(url);
    return findDriver(real).getPropertyInfo(real, info);
  }

  private static Driver findDriver(String realUrl) throws SQLException {
    for (Driver d : CANDIDATES) {
      if (d.acceptsURL(realUrl)) {
        return d;
      }
    }
    Enumeration<Driver> drivers = DriverManager.getDrivers();
    while (drivers.hasMoreElements()) {
      Driver d = drivers.nextElement();
      if (!(d instanceof FencedDriver) && d.acceptsURL(realUrl)) {
        return d;
      }
    }
    throw new SQLException(
        "no JDBC driver accepts "
            + realUrl
            + " (from a jdbc:fenced: URL); put"
            + " the database's driver on the class path, or register it with"
            + " FencedDriver.addDriverCandidate(driver)",
        "08001");
  }

  @Override
  public int getMajorVersion() {
    return 0;
  }

  @Override
  public int getMinorVersion() {
    return 1;
  }

  /**
   * A wrapper is only as compliant as the driver under it, which this class cannot know up front.
   */
  @Override
  public boolean jdbcCompliant() {
    return false;
  }

  @Override
  public Logger getParentLogger() {
    return Logger.getLogger("dev.lease.jdbc");
  }
}
