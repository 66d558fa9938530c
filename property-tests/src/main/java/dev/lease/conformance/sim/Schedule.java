package dev.lease.conformance.sim;

import java.util.List;

/**
 * A generated simulation schedule: how many processes, their clock rates (per mille off true time),
 * the seed of their workers' choices, how long it runs, and the faults. QuickTheories shrinks it to
 * the smallest schedule that still fails.
 */
public record Schedule(int seed, int durationMs, List<Integer> ratesPerMille, List<Fault> faults) {

  @Override
  public String toString() {
    StringBuilder b =
        new StringBuilder(
            "Schedule["
                + ratesPerMille.size()
                + " processes, clock rates "
                + ratesPerMille
                + " per mille, worker seed "
                + seed
                + ", "
                + durationMs
                + " ms, "
                + faults.size()
                + " faults");
    for (Fault f : faults) {
      b.append("\n    ").append(f);
    }
    return b.append("]").toString();
  }
}
