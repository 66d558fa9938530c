package dev.lease.testing;

/**
 * A marker: lease-jdbc honours its negative-control switch {@code -Dlease.jdbc.testing.weaken} only
 * when this class (or the conformance runner's {@code dev.lease.conformance.WeakenedFencesAllowed})
 * is on the class path, and refuses to build fencing options otherwise, so a leftover flag cannot
 * weaken a production fence. lease-agent likewise loads the weakened rules of its negative controls
 * ({@code -Dlease.agent.testing.rules}) only with it on the class path (and {@code
 * -Dlease.agent.testJvm=true}). Only test support and the conformance runner contain it.
 */
public final class WeakenedFencesAllowed {
  private WeakenedFencesAllowed() {}
}
