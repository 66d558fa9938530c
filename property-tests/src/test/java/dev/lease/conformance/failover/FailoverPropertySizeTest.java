package dev.lease.conformance.failover;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.lease.conformance.Size;
import org.junit.jupiter.api.Test;

/** The failover property's sizes and controls as the conformance runner builds it. */
class FailoverPropertySizeTest {

  /** Issue 19's bar for the runner too: its full size fails the user's database over 20 times. */
  @Test
  void theRunnersFullSizeRunsTwentyFailoversAndItsQuickSizeThree() {
    FailoverProperty runners = new FailoverProperty(null);
    assertEquals(20, runners.rounds(Size.FULL));
    assertEquals(3, runners.rounds(Size.QUICK));
    assertEquals(2, runners.controls().size()); // each runs against the user's HA
  }
}
