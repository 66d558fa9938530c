package dev.lease.jdbc.internal.fence;

import java.sql.Connection;
import java.sql.SQLException;

/** The fence's entries from outside this package: build one, reset one, a vendor data call. */
public final class Fences {

  private Fences() {}

  /** A fenced view of {@code connection}, which is not fenced yet, built from {@code config}. */
  public static Connection wrap(Connection connection, FenceConfig config) {
    return new FencingConnection(connection, config);
  }

  /** {@link #wrap} for the {@code jdbc:fenced:} driver, which marks what it opens. */
  public static Connection wrapOpenedByUrl(Connection connection, FenceConfig config) {
    FencingConnection fenced = new FencingConnection(connection, config);
    fenced.openedByUrl = true;
    return fenced;
  }

  /**
   * True if {@code connection} is (or wraps, at any depth of pool proxies) a connection the {@code
   * jdbc:fenced:} driver opened.
   */
  public static boolean openedByUrl(Connection connection) throws SQLException {
    if (!(connection instanceof FencingConnection)
        && !connection.isWrapperFor(FencingConnection.class)) {
      return false;
    }
    return connection.unwrap(FencingConnection.class).openedByUrl;
  }

  /**
   * The transaction of {@code connection} ended outside it (an XA branch): {@code
   * FenceInternals.transactionEndedElsewhere}, the agent's XA support. Not on {@code
   * FencedConnections}: it makes a fence forget a refused or poisoned transaction. A no-op for a
   * connection that is not fenced.
   */
  public static void endedElsewhere(Connection connection) {
    if (connection instanceof FencingConnection) {
      ((FencingConnection) connection).fence.endedElsewhere();
    }
  }

  /**
   * The driver's {@code iface} object behind fenced {@code connection} for one vendor call whose
   * result is data: {@code FenceInternals.vendorDataCall}, the agent's vendor face.
   */
  public static <T> T forDataCall(Connection connection, Class<T> iface) throws SQLException {
    if (connection instanceof FencingConnection) {
      return ((FencingConnection) connection).forDataCall(iface);
    }
    return connection.unwrap(iface);
  }
}
