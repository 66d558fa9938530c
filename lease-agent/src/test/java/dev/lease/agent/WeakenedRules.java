package dev.lease.agent;

import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.CallerWork;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.LifecycleRules;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.internal.FenceInternals;
import dev.lease.jdbc.internal.FenceRules;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The agent's rules broken on purpose, one mechanism at a time, for the negative controls of the
 * child-JVM tests; never in the agent jar. A child JVM loads it in place of {@link
 * AgentRules#PRODUCTION} through {@code -Dlease.agent.testing.rules=dev.lease.agent.WeakenedRules}
 * ({@link AppProcess} adds it with any other {@code lease.agent.testing.*} option), honoured only
 * in a test JVM ({@link TestingSwitches}). What it breaks, from the child's system properties:
 *
 * <ul>
 *   <li>{@code lease.agent.testing.disable}: a comma list of {@link #MECHANISMS};
 *   <li>{@code lease.agent.testing.faults}: a comma list of lease-core lifecycle mechanisms broken
 *       in the agent's lease manager ({@link #LIFECYCLE}, weakened {@link LifecycleRules} of {@link
 *       WeakenedLifecycle});
 *   <li>{@code lease.agent.testing.wrapEveryCall=true}: every nested hand-out call fences, as if
 *       there were no depth counter (WrapOnceIT);
 *   <li>{@code lease.agent.testing.failInstrumentationOf=CLASS}: weaving that class throws (the
 *       fail-closed test).
 * </ul>
 */
final class WeakenedRules implements AgentRules {

  /**
   * The mechanisms {@code lease.agent.testing.disable} can switch off, and the rule each breaks.
   */
  static final Set<String> MECHANISMS =
      Set.of(
          "inherited-getconnection", // Tomcat JDBC's DataSourceProxy and its like not woven
          "builtin-pools", // the pools' helper methods are no physical scopes
          "pooled-scopes", // getPooledConnection*/getXAConnection* are no physical scopes
          "scope-marks", // connections configured scopes return are not checked later
          "vendor-faces", // fenced connections without the driver's vendor interfaces
          "vendor-raw-check", // vendor calls may hand out the driver's own JDBC objects
          "vendor-held-check", // vendor calls run without the lease held
          "xa-poison", // branches under a lost lease prepare and commit
          "xa-strict-prepare", // MySQL/MariaDB branches prepare under STRICT (lock released)
          "xa-unlinked", // branches the agent could not link prepare under STRICT
          "ordered-shutdown", // the manager closes while the election still runs
          "bind-method-thread", // a configured method's thread is not the work under its lease
          "lease-pool", // a new lease connection per statement
          "lease-pool-reset", // lease connections kept whatever their session looks like
          "fence-unwrap-checks"); // lease-jdbc hands out unwrap's driver objects after a verify

  // only

  /** The lease manager's lifecycle rules {@code lease.agent.testing.faults} can break. */
  static final Set<String> LIFECYCLE = Set.of("RELEASE_BEFORE_STOPPING_WORK", "POLICY_ON_RELEASE");

  private final Set<String> disabled;
  private final Set<String> lifecycle;
  private final boolean wrapEveryCall;
  private final String failClass;

  WeakenedRules() {
    disabled = list("disable").collect(Collectors.toUnmodifiableSet());
    for (String d : disabled) {
      if (!MECHANISMS.contains(d)) {
        throw new IllegalArgumentException(
            "lease.agent.testing.disable: unknown mechanism " + d + "; one of " + MECHANISMS);
      }
    }
    lifecycle = list("faults").collect(Collectors.toUnmodifiableSet());
    for (String f : lifecycle) {
      if (!LIFECYCLE.contains(f)) {
        throw new IllegalArgumentException(
            "lease.agent.testing.faults: unknown fault " + f + "; one of " + LIFECYCLE);
      }
    }
    wrapEveryCall = Boolean.parseBoolean(property("wrapEveryCall"));
    failClass = property("failInstrumentationOf");
  }

  private static String property(String name) {
    return System.getProperty("lease.agent.testing." + name, "");
  }

  private static java.util.stream.Stream<String> list(String name) {
    return Arrays.stream(property(name).split(",")).map(String::trim).filter(s -> !s.isEmpty());
  }

  private boolean off(String mechanism) {
    return disabled.contains(mechanism);
  }

  @Override
  public List<String> dataSourceAncestors() {
    return off("inherited-getconnection") ? List.of() : AgentRules.super.dataSourceAncestors();
  }

  @Override
  public boolean weavesInheritedGetConnection() {
    return !off("inherited-getconnection");
  }

  @Override
  public List<MethodSpec> builtInPoolInternals() {
    return off("builtin-pools") ? List.of() : AgentRules.super.builtInPoolInternals();
  }

  @Override
  public boolean scopesPooledAndXaConnections() {
    return !off("pooled-scopes");
  }

  @Override
  public void beforeWeaving(String typeName) {
    if (typeName.equals(failClass)) {
      throw new IllegalStateException("lease.agent.testing.failInstrumentationOf=" + typeName);
    }
  }

  @Override
  public boolean marksScopeConnections() {
    return !off("scope-marks");
  }

  @Override
  public boolean fencesOutermostCallOnly() {
    return !wrapEveryCall;
  }

  @Override
  public boolean facesVendorInterfaces() {
    return !off("vendor-faces");
  }

  @Override
  public boolean refusesVendorResult(Class<?> type) {
    return !off("vendor-raw-check") && AgentRules.super.refusesVendorResult(type);
  }

  @Override
  public boolean refusesVendorCallUnder(Lease lease) {
    return !off("vendor-held-check") && AgentRules.super.refusesVendorCallUnder(lease);
  }

  @Override
  public boolean poisonsBranchOf(Lease lease) {
    return !off("xa-poison") && AgentRules.super.poisonsBranchOf(lease);
  }

  @Override
  public boolean refusesStrictMySqlPrepare() {
    return !off("xa-strict-prepare");
  }

  @Override
  public boolean refusesUnlinkedStrictPrepare() {
    return !off("xa-unlinked");
  }

  @Override
  public boolean stopsElectionBeforeManager() {
    return !off("ordered-shutdown");
  }

  @Override
  public CallerWork bindMethodThread(Lease lease) {
    return off("bind-method-thread") ? () -> false : AgentRules.super.bindMethodThread(lease);
  }

  @Override
  public int leaseConnectionsKeptIdle(int keepIdle) {
    return off("lease-pool") ? 0 : keepIdle;
  }

  @Override
  public boolean checksLeaseConnectionSessions() {
    return !off("lease-pool-reset");
  }

  @Override
  public FencingOptions.Builder fencing(FencingOptions.Builder builder) {
    return off("fence-unwrap-checks")
        ? FenceInternals.rulesForTesting(builder, new NoUnwrapChecks())
        : builder;
  }

  /** lease-jdbc's rules with its checks of driver objects handed out by unwrap switched off. */
  private static final class NoUnwrapChecks implements FenceRules {
    @Override
    public boolean checksUnwrap() {
      return false;
    }

    @Override
    public String toString() {
      return "[NO_UNWRAP_CHECKS]";
    }
  }

  @Override
  public LeaseManager.Builder leaseManager(LeaseManager.Builder builder) {
    if (!lifecycle.isEmpty()) {
      LeaseInternals.rulesForTesting(builder, new WeakenedLifecycle(lifecycle));
    }
    return builder;
  }

  /** The lease manager's lifecycle rules, broken as {@code lease.agent.testing.faults} names. */
  private static final class WeakenedLifecycle implements LifecycleRules {

    private final Set<String> broken;

    WeakenedLifecycle(Set<String> broken) {
      this.broken = broken;
    }

    /** RELEASE_BEFORE_STOPPING_WORK: the row is given back before the work under it stops. */
    @Override
    public void release(Runnable stopWork, Runnable giveBack) {
      if (broken.contains("RELEASE_BEFORE_STOPPING_WORK")) {
        giveBack.run();
        stopWork.run();
      } else {
        LifecycleRules.super.release(stopWork, giveBack);
      }
    }

    /** POLICY_ON_RELEASE: work that outlives a release's grace runs the failure policy. */
    @Override
    public void workOutlivedRelease(Runnable failurePolicy) {
      if (broken.contains("POLICY_ON_RELEASE")) {
        failurePolicy.run();
      }
    }
  }
}
