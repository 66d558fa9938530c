package dev.lease.conformance.sim;

import static org.junit.jupiter.api.Assertions.assertNull;

import dev.lease.conformance.QuickCheck;
import dev.lease.conformance.Size;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/**
 * The simulation replays exactly from its seed. (That it holds on 600 generated schedules with
 * every count met is the main job's: ConformanceRunnerTest runs it as the README does.)
 */
class SimulationPropertyTest {

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
