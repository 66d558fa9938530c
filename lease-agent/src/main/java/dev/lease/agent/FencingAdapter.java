package dev.lease.agent;

import dev.lease.jdbc.FencedConnections;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import java.sql.Connection;
import java.util.function.UnaryOperator;

/**
 * The one place the agent meets lease-jdbc: how a connection becomes fenced, from the
 * configuration. {@link FencedConnections#wrap} returns a connection that already is fenced (the
 * application uses lease-jdbc itself, at any depth of pool proxies) unchanged, so the agent never
 * fences twice. A connection that implements vendor interfaces gets a {@link VendorFace}, so casts
 * to them keep working.
 */
final class FencingAdapter {

  private FencingAdapter() {}

  static UnaryOperator<Connection> from(AgentConfig config) {
    XaTracking.fencing(config.fencing == AgentConfig.Fencing.STRICT);
    FencingOptions options =
        AgentRules.current()
            .fencing(
                FencingOptions.builder()
                    .mode(
                        config.fencing == AgentConfig.Fencing.STRICT
                            ? FencingMode.STRICT
                            : FencingMode.VERIFY))
            .build();
    return c -> VendorFace.of(c, FencedConnections.wrap(c, options));
  }
}
