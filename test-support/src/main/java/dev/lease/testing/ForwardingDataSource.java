package dev.lease.testing;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * An application's own DataSource that delegates every call, as routing, metrics, tenant-switching
 * and tracing wrappers do; subclasses override what they change. {@code unwrap} and {@code
 * isWrapperFor} follow {@link java.sql.Wrapper}: this object first, then the target.
 */
public class ForwardingDataSource implements DataSource {

  protected final DataSource target;

  public ForwardingDataSource(DataSource target) {
    this.target = target;
  }

  @Override
  public Connection getConnection() throws SQLException {
    return target.getConnection();
  }

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    return target.getConnection(user, password);
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return target.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    target.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    target.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return target.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return target.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return iface.isInstance(this) ? iface.cast(this) : target.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || target.isWrapperFor(iface);
  }
}
