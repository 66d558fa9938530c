package legacy;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The legacy application's own delegating DataSource (as many have: routing, metrics, tenant
 * switching) over HikariCP: getConnection calls nest, the agent must wrap once, at the top. It
 * stands alone, not on test-support's {@code ForwardingDataSource}: MisconfigurationIT loads it in
 * a class loader that sees only the legacy application's classes.
 */
public final class RoutingDataSource implements DataSource {

  private final DataSource target;

  public RoutingDataSource(DataSource target) {
    this.target = target;
  }

  @Override
  public Connection getConnection() throws SQLException {
    return target.getConnection();
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return target.getConnection(username, password);
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
