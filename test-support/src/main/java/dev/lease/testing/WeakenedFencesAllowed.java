package dev.lease.testing;

/**
 * A marker: lease-jdbc honours weakened fence rules (its negative controls' entry {@code
 * FenceInternals.rulesForTesting}) only when this class (or the conformance runner's {@code
 * dev.lease.conformance.WeakenedFencesAllowed}) is on the class path, and refuses them otherwise,
 * so no production fence can be weakened; lease-core's {@code LeaseInternals.rulesForTesting}
 * likewise. lease-agent likewise loads the weakened rules of its negative controls ({@code
 * -Dlease.agent.testing.rules}) only with it on the class path (and {@code
 * -Dlease.agent.testJvm=true}). Only test support and the conformance runner contain it.
 */
public final class WeakenedFencesAllowed {
  private WeakenedFencesAllowed() {}
}
