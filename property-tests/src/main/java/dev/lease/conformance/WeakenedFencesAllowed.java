package dev.lease.conformance;

/**
 * A marker: lease-jdbc honours weakened fence rules (its negative controls' entry {@code
 * FenceInternals.rulesForTesting}) only when this class (or test support's {@code
 * dev.lease.testing.WeakenedFencesAllowed}) is on the class path. The conformance runner contains
 * it because {@code --controls} runs lease-jdbc's weakened fences on purpose; an application never
 * does.
 */
public final class WeakenedFencesAllowed {
  private WeakenedFencesAllowed() {}
}
