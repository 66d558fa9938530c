package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/**
 * Issue 23: the starter's meters count a transfer on the side that hands the lease over and an
 * adoption on the side that takes it, and {@code lease.held} follows the lease across.
 */
class TransferMetersTest {

  @OnEveryDatabase
  void aTransferAndItsAdoptionAreCountedAndTheHeldGaugeFollows(TestDatabase db) {
    String table = TestDatabase.uniqueTable("tm");
    try (HikariDataSource ds = db.pooled(4)) {
      try {
        SimpleMeterRegistry ra = new SimpleMeterRegistry();
        SimpleMeterRegistry rb = new SimpleMeterRegistry();
        LeaseMetrics ma = new LeaseMetrics(true);
        LeaseMetrics mb = new LeaseMetrics(true);
        ma.bindTo(ra);
        mb.bindTo(rb);
        try (LeaseManager a = manager(ds, table, "a", ma);
            LeaseManager b = manager(ds, table, "b", mb)) {
          Lease lease = a.tryClaim("meters").orElseThrow();
          assertEquals(1.0, ra.get("lease.held").tag("lease", "meters").gauge().value());
          assertTrue(lease.transferTo("b"), db + ": transferred");
          assertTrue(b.tryClaim("meters").isPresent(), db + ": adopted");
          assertEquals(1.0, Replicas.count(ra, "lease.transfers", "lease", "meters"), db.name());
          assertEquals(1.0, Replicas.count(rb, "lease.adoptions", "lease", "meters"), db.name());
          assertEquals(1.0, Replicas.count(rb, "lease.handovers", "lease", "meters"), db.name());
          assertEquals(0.0, ra.get("lease.held").tag("lease", "meters").gauge().value());
          assertEquals(1.0, rb.get("lease.held").tag("lease", "meters").gauge().value());
        }
      } finally {
        TestDatabase.dropQuietly(ds, table);
      }
    }
  }

  private static LeaseManager manager(
      HikariDataSource ds, String table, String instance, LeaseMetrics metrics) {
    return LeaseManager.builder(ds)
        .table(table)
        .instance(instance)
        .listener(metrics)
        .failurePolicy(FailurePolicy.logOnly())
        .createTableIfMissing()
        .build();
  }
}
