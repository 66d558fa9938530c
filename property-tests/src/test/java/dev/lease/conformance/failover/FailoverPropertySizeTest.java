package dev.lease.conformance.failover;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.lease.conformance.Size;
import org.junit.jupiter.api.Test;

/** The failover property's sizes and controls as the conformance runner builds it. */
class FailoverPropertySizeTest {

  /**
   * Issue 19: at least 20 failovers per mode in CI, more in the runner's full size: it fails the
   * user's database over 50 times.
   */
  @Test
  void theRunnersFullSizeRunsFiftyFailoversAndItsQuickSizeThree() {
    FailoverProperty runners = new FailoverProperty(null);
    assertEquals(50, runners.rounds(Size.FULL));
    assertEquals(3, runners.rounds(Size.QUICK));
    // each runs against the user's HA: a clock-trusting holder, a kept term, term + 1
    assertEquals(3, runners.controls().size());
  }
}
