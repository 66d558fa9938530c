package dev.lease.conformance.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import org.junit.jupiter.api.Test;

class SimulationPropertyTest {

  @Test
  void invariantsHoldInVirtualTimeUnderEveryGeneratedFault() {
    PropertyResult r =
        new SimulationProperty()
            .check(null, Size.QUICK, 20261130L, ConformanceProperty.Progress.NONE);
    System.out.println(r);
    assertNull(r.failure(), r.failure());
    assertEquals(0, r.violations());
    assertTrue(r.schedules() >= 500, "schedules tried: " + r.schedules());
  }
}
