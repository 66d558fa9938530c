package dev.lease.conformance.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import java.sql.PreparedStatement;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * Negative controls of the simulation: each plugs in a deliberately broken participant and asserts
 * that the simulation reports the violation, with a seed and a shrunk schedule. Runs are
 * deterministic (fixed seeds, virtual time), so "caught" is not a matter of luck.
 */
class SimulationNegativeControlTest {

  private static final long SEED = 4242L;

  /** A claim without the expiry condition takes the lease from a live holder. */
  @Test
  void claimWithoutTheExpiryConditionIsCaught() {
    SimOptions broken =
        SimOptions.standard()
            .intruder(
                (c, table, name, leaseMs) -> {
                  try (PreparedStatement ps =
                      c.prepareStatement(
                          "UPDATE "
                              + table
                              + " SET holder = 'intruder', instance = 'intruder', term = term + 1,"
                              + " expires_at_ms = lease_test_now() + ?, revision = revision + 1 WHERE name = ?")) {
                    ps.setLong(1, leaseMs);
                    ps.setString(2, name);
                    ps.executeUpdate();
                  }
                });
    assertCaught(new SimulationProperty(broken), "invariant 2");
  }

  /**
   * A local deadline later than the lease: the holder's clock runs 40 % slow against a configured
   * bound of 10 %, so its 890 ms deadline lasts 1483 ms of true time, past the 1000 ms lease.
   */
  @Test
  void localDeadlineLaterThanTheLeaseIsCaught() {
    assertCaught(
        new SimulationProperty(SimOptions.standard().slowestClockRate(0.6)), "invariant 2");
  }

  /**
   * A keeper timed with the wall clock: an NTP step backwards makes the holder believe in a lease
   * the database already let expire.
   */
  @Test
  void keeperOnTheWallClockUnderAClockJumpIsCaught() {
    SimOptions broken = SimOptions.standard().clocks(WallClock::new);
    assertCaught(new SimulationProperty(broken), "invariant 2");
  }

  private static void assertCaught(SimulationProperty property, String what) {
    PropertyResult r = property.check(null, Size.QUICK, SEED, ConformanceProperty.Progress.NONE);
    System.out.println(r.failure());
    assertEquals(1, r.violations(), "the broken variant must be caught");
    assertNotNull(r.failure());
    assertTrue(r.failure().contains(what), r.failure());
    assertTrue(r.failure().contains("seed " + SEED), r.failure());
    assertTrue(r.failure().contains("shrunk schedule"), r.failure());
  }

  /** A wall clock: NTP may step it backwards, which a monotonic clock never does. */
  static final class WallClock extends ProcessClock {
    WallClock(LongSupplier trueNanos, long origin, double rate) {
      super(trueNanos, origin, rate);
    }

    @Override
    public boolean allowsBackwardJumps() {
      return true;
    }
  }
}
