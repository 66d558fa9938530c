package dev.lease.core.internal;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;

/**
 * A DataSource that opens a new {@link DriverManager} connection from a JDBC URL on every call (no
 * pool): the agent's connections to the lease database, and the conformance runner's connections to
 * the database it checks. Its {@link #toString()} hides a password in the URL.
 *
 * <p>Not API: it may change in any release.
 */
public class DriverManagerDataSource extends DataSourceAdapter {

  private final String url;
  private final Properties properties = new Properties();

  /**
   * @param user null to leave it to the URL
   * @param password null to leave it to the URL
   */
  public DriverManagerDataSource(String url, String user, String password) {
    this.url = url;
    if (user != null) {
      properties.setProperty("user", user);
    }
    if (password != null) {
      properties.setProperty("password", password);
    }
  }

  public String url() {
    return url;
  }

  @Override
  public Connection getConnection() throws SQLException {
    return DriverManager.getConnection(url, properties);
  }

  /** Connects with other credentials than its own. */
  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return DriverManager.getConnection(url, username, password);
  }

  @Override
  public String toString() {
    return url.replaceAll("(?i)(password=)[^&;]*", "$1***");
  }
}
