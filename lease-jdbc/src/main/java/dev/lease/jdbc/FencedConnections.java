package dev.lease.jdbc;

import dev.lease.jdbc.internal.fence.FenceConfig;
import dev.lease.jdbc.internal.fence.Fences;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;

/**
 * Wraps single connections: the entry point of the {@code -javaagent} and of code that builds its
 * own connections.
 */
public final class FencedConnections {

  private FencedConnections() {}

  /**
   * What a fence is built from: the user's options, the rules of its mechanisms and the executor of
   * its cancels (a small record per connection; the options stay a value that names nothing of the
   * fence).
   */
  static FenceConfig config(FencingOptions options) {
    return new FenceConfig(options, options.rules(), options.weakened(), options.cancelExecutor());
  }

  /**
   * Returns a fenced view of {@code connection}, or {@code connection} itself when it already is
   * fenced (at any depth of pool proxies), so wrapping twice is harmless.
   *
   * @param connection a physical or pooled connection; null gives null
   */
  public static Connection wrap(Connection connection, FencingOptions options) {
    Objects.requireNonNull(options, "options");
    if (connection == null) {
      return null;
    }
    if (isFenced(connection)) {
      return connection;
    }
    return Fences.wrap(connection, config(options));
  }

  /** {@link #wrap} for the {@code jdbc:fenced:} driver: marks the connection as opened by URL. */
  static Connection wrapOpenedByUrl(Connection connection, FencingOptions options) {
    if (isFenced(connection)) {
      return connection;
    }
    return Fences.wrapOpenedByUrl(connection, config(options));
  }

  /**
   * {@link #wrap} for a {@link FencedDataSource}: a connection its target hands out already fenced
   * by the {@code jdbc:fenced:} driver (a pool configured with that URL) is refused, closed, with a
   * message saying which fence to keep; the options of the FencedDataSource would be silently
   * ignored (issue 40 item 3). One fenced by lease-agent is handed out as it is.
   */
  static Connection wrapForDataSource(Connection connection, FencingOptions options)
      throws SQLException {
    if (connection == null || !isFenced(connection)) {
      return connection == null ? null : Fences.wrap(connection, config(options));
    }
    boolean byUrl;
    try {
      byUrl = Fences.openedByUrl(connection);
    } catch (SQLException | RuntimeException e) {
      byUrl = false;
    }
    if (byUrl) {
      try {
        connection.close();
      } catch (SQLException | RuntimeException e) {
        // the refusal below is what the caller needs to see
      }
      throw new SQLException(
          "FencedDataSource wraps a DataSource whose connections are already fenced by the"
              + " jdbc:fenced: driver (a pool configured with a jdbc:fenced: URL): fence once."
              + " Either give the pool the plain jdbc: URL and keep FencedDataSource.wrap(pool)"
              + " (its FencingOptions apply), or drop FencedDataSource and use the pool as it is"
              + " (the driver's options apply: FencedDriver.setDefaultOptions)",
          "55000");
    }
    return connection;
  }

  /** True if {@code connection} is fenced or wraps a fenced connection. */
  public static boolean isFenced(Connection connection) {
    if (connection instanceof FencedConnection) {
      return true;
    }
    try {
      return connection != null && connection.isWrapperFor(FencedConnection.class);
    } catch (SQLException | RuntimeException | AbstractMethodError e) {
      return false; // a closed or old-JDBC connection answers nothing useful: not fenced
    }
  }
}
