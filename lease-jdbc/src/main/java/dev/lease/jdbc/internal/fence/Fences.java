package dev.lease.jdbc.internal.fence;

import java.sql.Connection;

/** The fence's two entries from outside this package: build one, reset one. */
public final class Fences {

  private Fences() {}

  /** A fenced view of {@code connection}, which is not fenced yet, built from {@code config}. */
  public static Connection wrap(Connection connection, FenceConfig config) {
    return new FencingConnection(connection, config);
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
}
