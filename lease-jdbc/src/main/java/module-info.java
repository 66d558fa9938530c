/**
 * Fencing inside the application's own transaction: {@link dev.lease.jdbc.FencedDataSource}, the
 * {@code jdbc:fenced:} {@link dev.lease.jdbc.FencedDriver} and {@link
 * dev.lease.jdbc.FencedConnections}. The bridge to lease-agent ({@code dev.lease.jdbc.internal}) is
 * exported to the agent's module only; the fence ({@code dev.lease.jdbc.internal.fence}) and the
 * SQL reading ({@code dev.lease.jdbc.internal.sql}) to none.
 */
module dev.lease.jdbc {
  requires transitive dev.lease.core;
  requires transitive java.sql;
  requires org.slf4j;

  exports dev.lease.jdbc;

  // not API: lease-agent's bridge to the fence (the agent runs on the class path, where module
  // boundaries do not apply; this states the one module it is for)
  exports dev.lease.jdbc.internal to
      dev.lease.agent;

  provides java.sql.Driver with
      dev.lease.jdbc.FencedDriver;
}
