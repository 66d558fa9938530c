package dev.lease.jdbc.internal.fence;

import dev.lease.testing.ConnectionSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * A "pool" that hands out one physical connection and never rolls back when it is returned (Tomcat
 * JDBC's default {@code rollbackOnReturn=false} behaves so): close() is a no-op. Closing the pool
 * rolls back whatever is open (begun by the driver or as SQL) and closes the connection.
 */
final class NoRollbackOnReturn extends ConnectionSource implements AutoCloseable {
  private final Connection physical;

  NoRollbackOnReturn(DataSource real) throws SQLException {
    this.physical = real.getConnection();
  }

  @Override
  public Connection getConnection() {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              if (method.getName().equals("close")) {
                return null; // back to the "pool", transaction and all
              }
              if (method.getName().equals("isClosed")) {
                return false;
              }
              try {
                return method.invoke(physical, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  @Override
  public void close() throws SQLException {
    if (!physical.getAutoCommit()) {
      physical.rollback();
      physical.setAutoCommit(true);
    }
    try (Statement s = physical.createStatement()) {
      s.execute("ROLLBACK"); // one begun as SQL
    } catch (SQLException e) {
      // none open
    }
    physical.close();
  }
}
