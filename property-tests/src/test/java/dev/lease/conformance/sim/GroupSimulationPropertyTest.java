package dev.lease.conformance.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The group simulation holds with every count met, and its negative controls (a group that ignores
 * the share, the batched claim mutated two ways) are caught with the invariant they break.
 */
class GroupSimulationPropertyTest {

  private static final long SEED = 4242L;

  @Test
  void theGroupPropertyHoldsOnVirtualTimeSqlite() {
    PropertyResult r =
        new GroupSimulationProperty()
            .check(null, Size.QUICK, SEED, ConformanceProperty.Progress.NONE);
    System.out.println("sqlite (virtual time): " + r);
    assertEquals(PropertyResult.Verdict.HOLDS, r.verdict(), r.toString());
  }

  static Stream<Arguments> controls() {
    List<NegativeControl> all = new GroupSimulationProperty().controls();
    return Stream.of(
        Arguments.of("group/ignores-share", "fair share", all),
        Arguments.of("group/claim-keeps-term", "invariant 1", all),
        Arguments.of("group/claim-ignores-expiry", "invariant 2", all));
  }

  @ParameterizedTest(name = "{0} sqlite (virtual time)")
  @MethodSource("controls")
  void theBrokenGroupIsCaught(String id, String invariant, List<NegativeControl> all) {
    NegativeControl c = all.stream().filter(x -> x.id().equals(id)).findFirst().orElseThrow();
    PropertyResult r = c.broken().check(null, Size.QUICK, SEED, ConformanceProperty.Progress.NONE);
    System.out.println(id + ": " + r.failure());
    assertTrue(NegativeControl.caught(r), id + " must be caught: " + r);
    assertTrue(r.failure().contains("violation: " + invariant), r.failure());
    assertTrue(c.breaks().contains(invariant), c.breaks());
  }
}
