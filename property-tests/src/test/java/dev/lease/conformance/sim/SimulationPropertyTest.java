package dev.lease.conformance.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.QuickCheck;
import dev.lease.conformance.Size;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/**
 * The simulation replays exactly from its seed, and it holds with its transfer counts met. (That it
 * holds on 600 generated schedules with every count met on the runner's seeds is also the main
 * job's: ConformanceRunnerTest runs it as the README does.)
 */
class SimulationPropertyTest {

  /**
   * Issue 23: with transfers among the processes' moves, the quick run holds and has seen every
   * event its counts ask for, the transfer ones included (transfers adopted, expired unadopted,
   * sent with a verified transaction of the old term open, third processes refused meanwhile).
   */
  @Test
  void holdsWithTransfersAndEveryCountMet() {
    PropertyResult r =
        new SimulationProperty().check(null, Size.QUICK, 2323L, ConformanceProperty.Progress.NONE);
    System.out.println(r.counts());
    assertNull(r.failure(), () -> "the simulation failed: " + r.failure());
    assertEquals(PropertyResult.Verdict.HOLDS, r.verdict(), r::toString);
    for (String transfer :
        List.of(
            "transfers",
            "transfers adopted by their successor",
            "transfers that expired unadopted",
            "transfers with a verified transaction of the old term open",
            "claims refused while the lease was transferred to another process")) {
      assertTrue(
          r.counts().stream().anyMatch(c -> c.event().equals(transfer) && c.required() > 0),
          transfer + " must be a count with a minimum: " + r.counts());
    }
  }

  /** Virtual time, one thread: a schedule run twice takes exactly the same steps. */
  @Test
  void aScheduleReplaysExactly() {
    SimulationProperty p = new SimulationProperty();
    try (SimWorld world = new SimWorld(SimOptions.standard())) {
      QuickCheck.Falsified f =
          QuickCheck.run(
              77L,
              20,
              0,
              p.schedules(Size.QUICK),
              s -> {
                String first = p.run(world, s);
                List<String> trace = world.trace();
                String second = p.run(world, s);
                return Objects.equals(first, second) && trace.equals(world.trace());
              });
      assertNull(f, () -> "a schedule did not replay: " + f);
    }
  }
}
