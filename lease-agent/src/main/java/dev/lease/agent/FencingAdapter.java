package dev.lease.agent;

import java.sql.Connection;
import java.util.function.UnaryOperator;

/**
 * The one place the agent meets lease-jdbc: how a connection becomes fenced, from the configuration.
 */
final class FencingAdapter {

  private FencingAdapter() {}

  static UnaryOperator<Connection> from(AgentConfig config) {
    // TODO(lease-jdbc): FencedConnections.wrap(c, options) once the jdbc branch is merged
    return c -> c;
  }
}
