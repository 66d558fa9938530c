package dev.lease.conformance.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import org.junit.jupiter.api.Test;

/** The model-based check must be able to fail: a model 1 ms off on the lease duration is caught. */
class ModelNegativeControlTest {

  @Test
  void aModelOneMillisecondOffIsCaughtWithAShrunkSequence() {
    PropertyResult r =
        new ModelProperty(1).check(null, Size.QUICK, 99L, ConformanceProperty.Progress.NONE);
    System.out.println(r.failure());
    assertEquals(1, r.violations());
    assertTrue(r.failure().contains("seed 99"), r.failure());
    assertTrue(r.failure().contains("shrunk sequence"), r.failure());
    assertTrue(r.failure().contains("expiring at"), r.failure());
  }
}
