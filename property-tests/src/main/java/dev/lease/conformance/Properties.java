package dev.lease.conformance;

import dev.lease.conformance.fault.FaultRunProperty;
import dev.lease.conformance.fault.PausedHolderProperty;
import dev.lease.conformance.sim.GroupSimulationProperty;
import dev.lease.conformance.sim.ModelProperty;
import dev.lease.conformance.sim.SimulationProperty;
import dev.lease.conformance.text.RawPathProperty;
import dev.lease.conformance.text.StaleScriptProperty;
import dev.lease.conformance.text.TakeoverScriptProperty;
import java.util.List;

/**
 * The conformance suite: every property, in the order the runner checks and reports them. A new
 * property joins the runner (its table, {@code --only}, {@code --controls}) by being listed here.
 */
public final class Properties {

  private Properties() {}

  public static List<ConformanceProperty> all() {
    return List.of(
        new ModelProperty(),
        new SimulationProperty(),
        new FaultRunProperty(),
        new PausedHolderProperty(),
        new StaleScriptProperty(),
        new TakeoverScriptProperty(),
        new RawPathProperty(),
        new GroupSimulationProperty());
  }

  /** Every negative control of every property, in the same order. */
  public static List<NegativeControl> controls() {
    return all().stream().flatMap(p -> p.controls().stream()).toList();
  }
}
