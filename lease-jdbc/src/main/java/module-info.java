/**
 * Fencing inside the application's own transaction: {@link dev.lease.jdbc.FencedDataSource}, the
 * {@code jdbc:fenced:} {@link dev.lease.jdbc.FencedDriver} and {@link
 * dev.lease.jdbc.FencedConnections}. The bridge to lease-agent ({@code dev.lease.jdbc.internal}) is
 * not exported: the agent runs on the class path.
 */
module dev.lease.jdbc {
  requires transitive dev.lease.core;
  requires transitive java.sql;
  requires org.slf4j;

  exports dev.lease.jdbc;

  provides java.sql.Driver with
      dev.lease.jdbc.FencedDriver;
}
