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

/** lease-core and lease-jdbc in virtual time on sqlite, under every generated fault. */
class SimulationPropertyTest {

  @Test
  void invariantsHoldInVirtualTimeUnderEveryGeneratedFault() {
    PropertyResult r =
        new SimulationProperty()
            .check(null, Size.QUICK, 20261130L, ConformanceProperty.Progress.NONE);
    System.out.println(r);
    assertEquals(PropertyResult.Verdict.HOLDS, r.verdict(), r.failure() + " " + r.counts());
    assertTrue(r.schedules() >= 500, "schedules tried: " + r.schedules());
    assertTrue(r.observed("database clock steps forward") > 0, r.toString());
    assertTrue(r.observed("database clock steps back") > 0, r.toString());
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
