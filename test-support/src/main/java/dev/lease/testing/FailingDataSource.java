package dev.lease.testing;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Wraps a real DataSource and, while {@link #failing(boolean) failing}, refuses every {@code
 * getConnection} as an unreachable database would: the way tests drop renewals without touching the
 * database itself.
 */
public final class FailingDataSource implements DataSource {
  private final DataSource delegate;
  private final AtomicBoolean failing = new AtomicBoolean();
  private final AtomicInteger refused = new AtomicInteger();

  public FailingDataSource(DataSource delegate) {
    this.delegate = delegate;
  }

  public void failing(boolean on) {
    failing.set(on);
  }

  /** How many connections were refused so far. */
  public int refused() {
    return refused.get();
  }

  @Override
  public Connection getConnection() throws SQLException {
    if (failing.get()) {
      refused.incrementAndGet();
      throw new SQLTransientConnectionException(
          "connection refused (injected by the test)", "08001");
    }
    return delegate.getConnection();
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    if (failing.get()) {
      refused.incrementAndGet();
      throw new SQLTransientConnectionException(
          "connection refused (injected by the test)", "08001");
    }
    return delegate.getConnection(username, password);
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return delegate.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    delegate.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    delegate.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return delegate.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return delegate.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return iface.isInstance(this) ? iface.cast(this) : delegate.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || delegate.isWrapperFor(iface);
  }
}
