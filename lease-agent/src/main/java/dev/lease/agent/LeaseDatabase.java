package dev.lease.agent;

import dev.lease.core.internal.DataSourceAdapter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Properties;

/**
 * The agent's own connections to the lease database (claims, renewals, releases, a replica's
 * polls): {@link DriverManager} connections with the application's JDBC driver, kept open between
 * statements by a {@link LeaseConnectionPool} of their own, never fenced themselves and never taken
 * from (or counted against) a pool of the application. Errors never carry the password.
 */
final class LeaseDatabase extends DataSourceAdapter implements AutoCloseable {

  private final String url;
  private final String password;
  private final Properties properties = new Properties();
  private final LeaseConnectionPool pool;

  LeaseDatabase(AgentConfig config) {
    this(config, null);
  }

  /** With a pool of {@code pool}'s making (the tests' variants), or the agent's (null). */
  LeaseDatabase(
      AgentConfig config,
      java.util.function.Function<LeaseConnectionPool.Opener, LeaseConnectionPool> pool) {
    this.url = config.url;
    this.password = config.password;
    if (config.user != null) {
      properties.setProperty("user", config.user);
    }
    if (config.password != null) {
      properties.setProperty("password", config.password);
    }
    this.pool = pool == null ? new LeaseConnectionPool(this::open) : pool.apply(this::open);
  }

  @Override
  public Connection getConnection() throws SQLException {
    return pool.getConnection();
  }

  @Override
  public Connection getConnection(String username, String pw) throws SQLException {
    throw new SQLFeatureNotSupportedException(
        "the lease database uses the agent's configured user");
  }

  /** A new physical connection, outside fencing. */
  private Connection open() throws SQLException {
    try {
      return ConnectionFencing.unfenced(() -> DriverManager.getConnection(url, properties));
    } catch (SQLException e) {
      SQLException redacted =
          new SQLException(
              Secrets.redact(e.getMessage(), password)
                  + " (lease database "
                  + Secrets.redactUrl(url)
                  + ")",
              e.getSQLState(),
              e.getErrorCode());
      redacted.setStackTrace(e.getStackTrace());
      throw redacted;
    }
  }

  LeaseConnectionPool pool() {
    return pool;
  }

  /** Closes the kept connections: after the lease manager closed, at shutdown. */
  @Override
  public void close() {
    pool.close();
  }

  @Override
  public String toString() {
    return "LeaseDatabase[" + Secrets.redactUrl(url) + "]";
  }
}
