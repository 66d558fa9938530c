package dev.lease.jdbc.internal;

import java.sql.Connection;
import java.util.function.Consumer;

/**
 * What lease-agent needs from lease-jdbc and applications must not call: resetting a fence whose
 * transaction ended outside its connection (an XA branch). Any code that could call it could make a
 * fence forget a refused or poisoned transaction, so it is not on {@code FencedConnections}.
 *
 * <p><b>Not API.</b> It may change in any release. How: the "shared secrets" pattern, as
 * lease-core's {@code LeaseInternals}: {@code dev.lease.jdbc} registers the operation when its
 * fenced connection class loads.
 */
public final class FenceInternals {

  private static volatile Consumer<Connection> endedElsewhere;

  private FenceInternals() {}

  /**
   * Called once, by {@code dev.lease.jdbc} when its fenced connection class is initialised.
   *
   * @throws IllegalStateException if called again, or from another package
   */
  public static void register(Consumer<Connection> implementation) {
    if (!implementation.getClass().getName().startsWith("dev.lease.jdbc.FencingConnection")
        || implementation.getClass().getClassLoader() != FenceInternals.class.getClassLoader()) {
      throw new IllegalStateException("only lease-jdbc registers its internal access");
    }
    synchronized (FenceInternals.class) {
      if (endedElsewhere != null) {
        throw new IllegalStateException("lease-jdbc's internal access is already registered");
      }
      endedElsewhere = implementation;
    }
  }

  /**
   * The transaction of a fenced connection ended outside the connection: an XA branch was ended,
   * prepared, committed or rolled back through its {@code XAResource}. Its verified or poisoned
   * state is forgotten, so the next transaction on the connection verifies again. For the agent's
   * XA support; a no-op for connections that are not fenced.
   */
  public static void transactionEndedElsewhere(Connection connection) {
    Consumer<Connection> hook = endedElsewhere;
    if (hook == null) {
      try {
        Class.forName(
            "dev.lease.jdbc.FencingConnection", true, FenceInternals.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException("lease-jdbc is incomplete: no FencingConnection", e);
      }
      hook = endedElsewhere;
      if (hook == null) {
        throw new IllegalStateException("lease-jdbc did not register its internal access");
      }
    }
    hook.accept(connection);
  }
}
