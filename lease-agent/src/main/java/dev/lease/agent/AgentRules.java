package dev.lease.agent;

import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.CallerWork;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.FencingOptions;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;

/**
 * The rules of the agent's mechanisms that its negative controls break one at a time: what is
 * woven, how hand-outs are fenced, the vendor faces' checks, the XA branch rules, the leader's
 * shutdown order, the binding of a configured method's thread, the lease connections, the lease
 * manager, the fence of lease-jdbc the agent builds. The default methods are the agent's rules;
 * production runs {@link #PRODUCTION}.
 *
 * <p>A weakened implementation (the control of one mechanism) lives in the agent's test sources
 * only, never in the jar: {@link TestingSwitches#rules} loads it in place of these in one of this
 * project's test JVMs. Production code asks a rule here and branches on no test switch.
 */
interface AgentRules {

  AgentRules PRODUCTION = new AgentRules() {};

  /** The rules of this JVM: {@link #PRODUCTION}, or a test JVM's weakened ones. */
  static AgentRules current() {
    return Loaded.RULES;
  }

  // ---- weaving (Instrumenter)

  /** Classes DataSources inherit getConnection from that are not DataSources themselves. */
  default List<String> dataSourceAncestors() {
    return Instrumenter.BUILT_IN_DATA_SOURCE_ANCESTORS;
  }

  /** Whether a loading DataSource's superclasses that declare getConnection are woven too. */
  default boolean weavesInheritedGetConnection() {
    return true;
  }

  /** The built-in pools' methods where they open, test and evict physical connections. */
  default List<MethodSpec> builtInPoolInternals() {
    return Instrumenter.BUILT_IN_POOL_INTERNALS;
  }

  /** Whether getPooledConnection* and getXAConnection* are physical scopes. */
  default boolean scopesPooledAndXaConnections() {
    return true;
  }

  /** Runs before a JDBC type is woven; an exception fails its weaving (the agent fails closed). */
  default void beforeWeaving(String typeName) {}

  // ---- hand-outs (ConnectionFencing)

  /** Whether the connections configured scopes return are marked, checked at their statements. */
  default boolean marksScopeConnections() {
    return true;
  }

  /** Whether only the outermost of nested hand-out calls fences (the depth counter). */
  default boolean fencesOutermostCallOnly() {
    return true;
  }

  // ---- vendor faces (VendorFace)

  /** Whether fenced connections also implement the driver's vendor interfaces. */
  default boolean facesVendorInterfaces() {
    return true;
  }

  /** Whether a vendor call whose result is of {@code type} is refused (a raw JDBC object). */
  default boolean refusesVendorResult(Class<?> type) {
    return Connection.class.isAssignableFrom(type)
        || Statement.class.isAssignableFrom(type)
        || ResultSet.class.isAssignableFrom(type);
  }

  /** Whether a vendor call is refused before the driver runs it, under the bound lease or null. */
  default boolean refusesVendorCallUnder(Lease lease) {
    return lease != null && !lease.isHeld();
  }

  // ---- XA branches (XaTracking)

  /** Whether a branch that ran under {@code lease} is rolled back instead of prepared/committed. */
  default boolean poisonsBranchOf(Lease lease) {
    return !lease.isHeld();
  }

  /** Whether a MySQL/MariaDB branch under STRICT is refused a two-phase prepare. */
  default boolean refusesStrictMySqlPrepare() {
    return true;
  }

  /** Whether a branch the agent could not link is refused a prepare under STRICT (fail closed). */
  default boolean refusesUnlinkedStrictPrepare() {
    return true;
  }

  /**
   * Whether a handle's mark (it ran statements under a MySQL/MariaDB lease, perhaps in a branch the
   * agent cannot link) is cleared only once its session is shown to be in no XA branch, not on a
   * successful {@code commit()} alone.
   */
  default boolean probesSessionBeforeClearingXaMark() {
    return true;
  }

  // ---- leader mode (LeaderElection)

  /** Whether the election has ended before the manager closes at shutdown. */
  default boolean stopsElectionBeforeManager() {
    return true;
  }

  // ---- methods mode (MethodLeases)

  /** Binds a configured method's thread to its lease as the work under it. */
  default CallerWork bindMethodThread(Lease lease) {
    return LeaseInternals.bindCurrentThread(lease);
  }

  // ---- lease connections (LeaseConnectionPool)

  /** How many idle lease connections are kept, of the agent's {@code keepIdle}. */
  default int leaseConnectionsKeptIdle(int keepIdle) {
    return keepIdle;
  }

  /** Whether a lease connection whose session looks changed is discarded. */
  default boolean checksLeaseConnectionSessions() {
    return true;
  }

  // ---- lease manager (LeaseAgent)

  /** The agent's lease manager as configured, before it is built. */
  default LeaseManager.Builder leaseManager(LeaseManager.Builder builder) {
    return builder;
  }

  // ---- the fence (FencingAdapter)

  /**
   * lease-jdbc's fencing options as configured, before they are built (a weakened implementation
   * applies lease-jdbc's weakened rules through its guarded entry {@code
   * FenceInternals.rulesForTesting}).
   */
  default FencingOptions.Builder fencing(FencingOptions.Builder builder) {
    return builder;
  }

  /** Loaded once, at the first use ({@link LeaseAgent#premain} makes it first, to fail there). */
  final class Loaded {
    static final AgentRules RULES = TestingSwitches.rules();

    private Loaded() {}
  }
}
