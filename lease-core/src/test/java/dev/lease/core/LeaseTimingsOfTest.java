package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * {@link LeaseTimings#of(Duration)} derives every timing from the lease duration in the defaults'
 * proportions; the agent's {@code lease-duration=} (AgentConfigTest) and the starter's {@code
 * lease.duration} (PropertiesTest) are checked against it, so the three agree.
 */
class LeaseTimingsOfTest {

  @Test
  void theDefaultDurationGivesTheDefaults() {
    assertEquals(
        LeaseTimings.DEFAULTS.toString(), LeaseTimings.of(Duration.ofSeconds(15)).toString());
  }

  @Test
  void theOtherTimingsScaleWithTheLease() {
    LeaseTimings t = LeaseTimings.of(Duration.ofSeconds(3));
    assertEquals(Duration.ofSeconds(3), t.leaseDuration());
    assertEquals(Duration.ofMillis(400), t.renewInterval());
    assertEquals(Duration.ofMillis(1000), t.attemptTimeout());
    assertEquals(Duration.ofMillis(2000), t.localDeadline());
    assertEquals(Duration.ofMillis(1000), t.gracePeriod());
    assertEquals(LeaseTimings.DEFAULTS.maxClockRateError(), t.maxClockRateError());
  }

  @Test
  void anOverrideReplacesOneDerivedTiming() {
    LeaseTimings t =
        LeaseTimings.builderFor(Duration.ofMinutes(1)).renewInterval(Duration.ofSeconds(1)).build();
    assertEquals(Duration.ofSeconds(1), t.renewInterval());
    assertEquals(Duration.ofSeconds(40), t.localDeadline());
  }

  @Test
  void aLeaseTooShortToDeriveFromIsRejectedWithTheTimingNamed() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> LeaseTimings.of(Duration.ofMillis(7)));
    assertTrue(e.getMessage().contains("renewInterval must be positive"), e.getMessage());
  }
}
