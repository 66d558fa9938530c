package dev.lease.testing;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

/** A DataSource that opens a new connection from a JDBC URL on every call (no pool). */
public final class UrlDataSource extends ConnectionSource {
  private final String url;

  public UrlDataSource(String url) {
    this.url = url;
  }

  @Override
  public Connection getConnection() throws SQLException {
    return DriverManager.getConnection(url);
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return DriverManager.getConnection(url, username, password);
  }
}
