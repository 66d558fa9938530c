/**
 * Leases in the application's own database: {@link dev.lease.core.LeaseManager} claims, renews and
 * releases them ({@code dev.lease.core}), a {@link dev.lease.core.group.LeaseGroup} shares keys
 * among replicas, a {@link dev.lease.core.scheduler.LeaseScheduler} runs each instant of a schedule
 * once across them. The SQL of each database ({@code dev.lease.core.dialect}) and the bridge to the
 * other modules of this project ({@code dev.lease.core.internal}) are exported only to those
 * modules.
 */
module dev.lease.core {
  requires transitive java.sql;
  requires org.slf4j;

  exports dev.lease.core;
  exports dev.lease.core.group;
  exports dev.lease.core.scheduler;

  // not API: this project's modules only (on the class path, as lease-agent and the tests run,
  // module boundaries do not apply)
  exports dev.lease.core.dialect to
      dev.lease.jdbc;
  exports dev.lease.core.internal to
      dev.lease.jdbc,
      dev.lease.agent,
      dev.lease.spring.boot;
}
