package dev.lease.conformance.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Negative controls of the simulation, one per invariant at least: each breaks the real mechanism
 * (lease-core's claim, verify, transfer or adopt statement, lease-jdbc's rollback, the clock the
 * keeper relies on) and must be reported with the invariant it breaks, a seed and a shrunk
 * schedule. Runs are deterministic (fixed seed, virtual time), so "caught" is not a matter of luck.
 */
class SimulationNegativeControlTest {

  private static final long SEED = 4242L;

  static Stream<Arguments> controls() {
    List<NegativeControl> all = new SimulationProperty().controls();
    return Stream.of(
        Arguments.of("simulation/claim-keeps-term", "invariant 1", all),
        Arguments.of("simulation/claim-ignores-expiry", "invariant 2", all),
        Arguments.of("simulation/verify-ignores-holder", "invariant 3", all),
        Arguments.of("simulation/rollback-lost", "invariant 4", all),
        Arguments.of("simulation/slow-clock", "invariant 2", all),
        Arguments.of("simulation/wall-clock", "invariant 2", all),
        Arguments.of("simulation/transfer-frees-row", "transfer", all),
        Arguments.of("simulation/adopt-ignores-successor", "transfer", all));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("controls")
  void theBrokenMechanismIsCaught(String id, String invariant, List<NegativeControl> all) {
    NegativeControl c = all.stream().filter(x -> x.id().equals(id)).findFirst().orElseThrow();
    PropertyResult r = c.broken().check(null, Size.QUICK, SEED, ConformanceProperty.Progress.NONE);
    System.out.println(id + ": " + r.failure());
    assertTrue(NegativeControl.caught(r), id + " must be caught: " + r);
    assertTrue(r.failure().contains("violation: " + invariant), r.failure());
    assertTrue(r.failure().contains("seed " + SEED), r.failure());
    assertTrue(r.failure().contains("shrunk schedule"), r.failure());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("controls")
  void everyControlIsListedForTheRunner(String id, String invariant, List<NegativeControl> all) {
    assertEquals(1, all.stream().filter(c -> c.id().equals(id)).count());
    assertTrue(
        all.stream().filter(c -> c.id().equals(id)).findFirst().get().breaks().contains(invariant));
  }
}
