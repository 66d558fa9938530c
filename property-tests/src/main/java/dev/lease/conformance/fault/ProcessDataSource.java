package dev.lease.conformance.fault;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A process's way to the database in a fault run: while the process is "paused" (its threads
 * stopped, as in a long GC pause), it opens no new connection, so its keeper's renewals fail as
 * they would.
 */
final class ProcessDataSource implements DataSource {

  private final DataSource delegate;
  private volatile long refuseUntilNanos = System.nanoTime();

  ProcessDataSource(DataSource delegate) {
    this.delegate = delegate;
  }

  void refuseFor(long millis) {
    refuseUntilNanos = System.nanoTime() + millis * 1_000_000L;
  }

  @Override
  public Connection getConnection() throws SQLException {
    if (System.nanoTime() - refuseUntilNanos < 0) {
      throw new SQLTransientConnectionException("process paused (injected fault)", "08001");
    }
    return delegate.getConnection();
  }

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    return getConnection();
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
    throw new SQLException("not a wrapper");
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return false;
  }
}
