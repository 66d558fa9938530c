package dev.lease.conformance.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import org.junit.jupiter.api.Test;

/** lease-core (and lease-jdbc's transactions) against the reference model, on sqlite. */
class ModelPropertyTest {

  @Test
  void leaseCoreAgreesWithTheReferenceModelOnGeneratedCommandSequences() {
    PropertyResult r =
        new ModelProperty().check(null, Size.QUICK, 20261130L, ConformanceProperty.Progress.NONE);
    System.out.println(r);
    assertEquals(PropertyResult.Verdict.HOLDS, r.verdict(), r.failure() + " " + r.counts());
    assertTrue(r.schedules() >= 1_000, "sequences tried: " + r.schedules());
    assertTrue(r.counts().stream().filter(c -> c.required() > 0).count() >= 5, r.toString());
  }
}
