package dev.lease.agent;

import dev.lease.core.internal.DriverManagerDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;

/**
 * The agent's own connections to the lease database (claims, renewals, releases): plain {@link
 * DriverManager} connections with the application's JDBC driver, never fenced themselves. Errors
 * never carry the password.
 */
final class LeaseDatabase extends DriverManagerDataSource {

  private final String password;

  LeaseDatabase(AgentConfig config) {
    super(config.url, config.user, config.password);
    this.password = config.password;
  }

  @Override
  public Connection getConnection() throws SQLException {
    try {
      return ConnectionFencing.unfenced(super::getConnection);
    } catch (SQLException e) {
      SQLException redacted =
          new SQLException(
              Secrets.redact(e.getMessage(), password)
                  + " (lease database "
                  + Secrets.redactUrl(url())
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
  public String toString() {
    return "LeaseDatabase[" + Secrets.redactUrl(url()) + "]";
  }
}
