package dev.lease.jdbc;

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
    return Fences.wrap(connection, options.fence());
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
