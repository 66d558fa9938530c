package dev.lease.conformance.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.testing.TestDatabase;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class FaultRunPropertyTest {

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void strictFencingHoldsUnderRealThreadsAndInjectedFaults(TestDatabase db) {
    PropertyResult r =
        new FaultRunProperty()
            .check(
                new Target(db.url(), null, null),
                Size.QUICK,
                7L,
                ConformanceProperty.Progress.NONE);
    System.out.println(db + ": " + r);
    assertNull(r.failure(), r.failure());
    assertEquals(0, r.violations());
    assertTrue(r.schedules() > 0 && r.faults() > 0, r.toString());
  }
}
