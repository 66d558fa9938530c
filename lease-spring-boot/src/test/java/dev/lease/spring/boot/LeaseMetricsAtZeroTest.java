package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The counters of what should not happen exist at zero before their first event (no database: the
 * meters alone), with and without the lease tag.
 */
class LeaseMetricsAtZeroTest {

  @Test
  void withoutTheLeaseTagEveryAlarmCounterExistsAtZeroWhenBound() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    new LeaseMetrics(false).bindTo(registry);
    assertEquals(0.0, registry.get("lease.claims.refused").counter().count());
    for (String reason : List.of("not_held", "local_deadline")) {
      assertEquals(0.0, registry.get("lease.losses").tag("reason", reason).counter().count());
    }
    for (String outcome : List.of("superseded", "skipped")) {
      assertEquals(
          0.0, registry.get("lease.scheduler.instants").tag("outcome", outcome).counter().count());
    }
  }

  @Test
  void withTheLeaseTagJobsAtStartAndOtherLeasesAtTheirFirstEvent() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    LeaseMetrics metrics = new LeaseMetrics(true);
    metrics.jobs(List.of("hourly")); // before the registry is bound: registered when it is
    metrics.bindTo(registry);
    assertEquals(
        0.0,
        registry
            .get("lease.scheduler.instants")
            .tags("lease", "hourly", "outcome", "skipped")
            .counter()
            .count());
    assertEquals(
        0.0,
        registry
            .get("lease.losses")
            .tags("lease", "hourly", "reason", "not_held")
            .counter()
            .count());

    metrics.claimRefused("nightly"); // its first event
    assertEquals(
        1.0, registry.get("lease.claims.refused").tags("lease", "nightly").counter().count());
    assertNotNull(
        registry
            .get("lease.losses")
            .tags("lease", "nightly", "reason", "local_deadline")
            .counter());
  }
}
