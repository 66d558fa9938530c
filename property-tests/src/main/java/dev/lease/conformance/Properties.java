package dev.lease.conformance;

import dev.lease.conformance.fault.FaultRunProperty;
import dev.lease.conformance.fault.PausedHolderProperty;
import dev.lease.conformance.sim.ModelProperty;
import dev.lease.conformance.sim.SimulationProperty;
import java.util.List;

/** The conformance suite: every property, in the order the runner checks and reports them. */
public final class Properties {

  private Properties() {}

  public static List<ConformanceProperty> all() {
    return List.of(
        new ModelProperty(),
        new SimulationProperty(),
        new FaultRunProperty(),
        new PausedHolderProperty());
  }
}
