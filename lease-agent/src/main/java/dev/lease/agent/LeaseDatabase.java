package dev.lease.agent;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Properties;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The agent's own connections to the lease database (claims, renewals, releases): plain {@link
 * DriverManager} connections with the application's JDBC driver, never fenced themselves. Errors
 * never carry the password.
 */
final class LeaseDatabase implements DataSource {

  private final String url;
  private final String password;
  private final Properties properties = new Properties();

  LeaseDatabase(AgentConfig config) {
    this.url = config.url;
    this.password = config.password;
    if (config.user != null) {
      properties.setProperty("user", config.user);
    }
    if (config.password != null) {
      properties.setProperty("password", config.password);
    }
  }

  @Override
  public Connection getConnection() throws SQLException {
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

  @Override
  public Connection getConnection(String username, String pw) throws SQLException {
    throw new SQLFeatureNotSupportedException(
        "the lease database uses the agent's configured user");
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {}

  @Override
  public void setLoginTimeout(int seconds) {}

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    if (iface.isInstance(this)) {
      return iface.cast(this);
    }
    throw new SQLException("LeaseDatabase does not wrap " + iface.getName());
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return iface.isInstance(this);
  }

  @Override
  public String toString() {
    return "LeaseDatabase[" + Secrets.redactUrl(url) + "]";
  }
}
