package dev.lease.conformance.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import org.junit.jupiter.api.Test;

/**
 * The model-based check must be able to fail on a broken lease-core: the claim statement without
 * its condition that the lease expired takes a held lease, where the model refuses, and the check
 * reports it with its seed and the shrunk sequence.
 */
class ModelNegativeControlTest {

  @Test
  void aClaimWithoutItsExpiryConditionIsCaughtWithAShrunkSequence() {
    NegativeControl control = new ModelProperty().controls().get(0);
    assertEquals("model/claim-ignores-expiry", control.id());
    PropertyResult r =
        control.broken().check(null, Size.QUICK, 99L, ConformanceProperty.Progress.NONE);
    System.out.println(r.failure());
    assertTrue(NegativeControl.caught(r), r.toString());
    assertTrue(r.failure().contains("seed 99"), r.failure());
    assertTrue(r.failure().contains("shrunk sequence"), r.failure());
    assertTrue(
        r.failure().contains("claim): the model expected REFUSED, lease-core did OK"), r.failure());
    assertTrue(r.note().startsWith("mutated statements and calls: "), r.note());
  }
}
