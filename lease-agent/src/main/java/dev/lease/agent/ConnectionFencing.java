package dev.lease.agent;

import java.sql.Connection;
import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the instrumented connection methods call: the advice bodies only call these static methods,
 * so this class must be visible from the application's class loader (it is, while the agent jar is
 * on the system class path; see docs/agent.md, class-loader limits). Public for the instrumented
 * code only; not an API.
 *
 * <p>The rules, per thread:
 *
 * <ul>
 *   <li><b>Outermost only.</b> A depth counter makes only the outermost call of a nested chain wrap
 *       (a delegating DataSource, then HikariCP, then HikariCP's DriverDataSource, then {@code
 *       Driver.connect}: one wrap, at the top, as OTel's {@code CallDepth}). Connections made below
 *       an advised call are the pool's physical connections and are never fenced.
 *   <li><b>Physical scopes.</b> A pool's own connection factory and test methods (built in per
 *       pool, {@code ConnectionPoolDataSource.getPooledConnection*} and {@code
 *       XADataSource.getXAConnection*} for every driver and pool, more with {@code pool-internals})
 *       are scopes inside which connections are physical: the pool's helper threads open, validate
 *       and evict connections there, so none of that is ever fenced or refused.
 *   <li><b>Scopes never hide a hand-out.</b> A {@code DataSource.getConnection} that returns,
 *       inside a physical scope, a connection no driver made (a pool's hand-out, not a physical
 *       connection) means the scope encloses the application's own connection: a {@code
 *       pool-internals} entry that would silently turn fencing off. That stops the JVM (or, with
 *       {@code on-unfenced=log}, is logged as an error).
 * </ul>
 */
public final class ConnectionFencing {

  private static final Logger log = LoggerFactory.getLogger(ConnectionFencing.class);

  /** {@code DataSource.getConnection} (and an ancestor's that a DataSource inherits). */
  public static final int DATA_SOURCE = 0;

  /** {@code Driver.connect}: always a physical connection of the driver. */
  public static final int DRIVER = 1;

  /** {@code PooledConnection.getConnection} / {@code XAConnection.getConnection}: a handle. */
  public static final int POOLED = 2;

  /** What one thread is inside of. */
  private static final class Frame {
    /** Nesting depth of advised connection calls. */
    int depth;

    /** Nesting depth of physical scopes. */
    int scopes;

    /** Physical connections made by drivers on this thread so far (a counter, compared). */
    int physicalMade;

    /** The outermost open scope (class#method) and whether the user configured it. */
    String scope;

    boolean configured;

    /**
     * Nesting depth of configured ({@code pool-internals}) scopes, and the outermost one's name.
     */
    int configuredScopes;

    String configuredScope;
  }

  private static final ThreadLocal<Frame> FRAME = ThreadLocal.withInitial(Frame::new);

  /** Classes of connections that drivers made: physical, wherever they are returned. */
  private static final Set<Class<?>> PHYSICAL_CLASSES =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  /** Scopes already reported as hiding a hand-out (report once each). */
  private static final Map<String, Boolean> REPORTED =
      Collections.synchronizedMap(new java.util.HashMap<>());

  /**
   * Connections that the first advised call inside a configured scope returned (a {@code
   * pool-internals} entry's physical connections, or the application's own if the entry encloses
   * its code), by identity, with the entry's name: checked at their first statement outside any
   * scope ({@link #statementOn}).
   */
  private static final IdentityMarks MARKS = new IdentityMarks();

  /** The rules of the hand-outs: the scope marks, one fence per nested call. */
  private static final AgentRules RULES = AgentRules.current();

  private static volatile UnaryOperator<Connection> fencer;
  private static volatile boolean haltOnUnfenced = true;

  /** False only in the negative control of WrapOnceIT: every nested call wraps. */
  private static final boolean OUTERMOST_ONLY = RULES.fencesOutermostCallOnly();

  private static final boolean MARKS_SCOPE_CONNECTIONS = RULES.marksScopeConnections();

  private ConnectionFencing() {}

  /** Installs what wraps the application's connections; until then connections pass unchanged. */
  static void install(UnaryOperator<Connection> wrap, boolean haltWhenUnfenced) {
    fencer = wrap;
    haltOnUnfenced = haltWhenUnfenced;
  }

  /**
   * This JVM's key, bound into the woven advice at instrumentation time: the public entry points
   * that change what is fenced ({@link #enter}, {@link #enterPhysicalScope}) do nothing for a
   * caller without it, so that code other than the agent's advice cannot switch fencing off for its
   * thread by calling them (they must be public: the advice is inlined into classes of other
   * packages and class loaders).
   */
  private static final long KEY = new java.util.SplittableRandom().nextLong();

  /** For the instrumentation only. */
  static long key() {
    return KEY;
  }

  /**
   * What {@link #enter} decided about one advised call, for its {@link #exit}; null when {@code
   * enter} threw (the advice suppressed it), or was called without the key.
   *
   * @param fence the call is the outermost of a nested chain outside every physical scope: what it
   *     returns is the application's connection, and comes back fenced. Every other call returns a
   *     pool's or driver's physical connection, never fenced. <b>This is where the agent decides
   *     between the application's connection and the pool's.</b>
   * @param firstInScope the outermost advised call inside a physical scope: if a {@code DataSource}
   *     returns there a connection no driver made, the scope encloses a pool's hand-out to the
   *     application ({@link #handOutInsideScope})
   * @param physicalMadeBefore the thread's count of physical connections made before the call
   */
  public record Entry(boolean fence, boolean firstInScope, int physicalMadeBefore) {}

  /**
   * Enter advice of an advised connection method: the decision ({@link Entry#fence}) is taken here,
   * from the thread's depth of advised calls and of physical scopes.
   *
   * @return the entry for {@link #exit}, or null for a caller without this JVM's key
   */
  public static Entry enter(long key) {
    if (key != KEY) {
      forged("enter");
      return null; // depth not counted
    }
    Frame f = FRAME.get();
    int depth = f.depth;
    boolean outermost = depth == 0 || !OUTERMOST_ONLY;
    Entry entry = new Entry(f.scopes == 0 && outermost, f.scopes > 0 && depth == 0, f.physicalMade);
    // counted only once nothing can throw any more (the allocation can): a suppressed throw here
    // must leave the depth as it was, or every later hand-out on this thread would be taken for a
    // nested one and come out unfenced
    f.depth++;
    return entry;
  }

  /**
   * Exit advice, also when the method threw ({@code c} is then null): the outermost call's
   * connection comes back fenced. Fails closed: whatever throws here (the advice would suppress it
   * and hand out {@code c} unfenced), or a failed {@link #enter}, gives a connection that refuses
   * every statement, and {@code c} is closed.
   *
   * @param kind {@link #DATA_SOURCE}, {@link #DRIVER} or {@link #POOLED}
   * @param self the instrumented object (for messages)
   */
  public static Connection exit(int kind, Entry entry, Object self, Connection c) {
    try {
      return exitUnguarded(kind, entry, self, c);
    } catch (Throwable t) {
      return refuse(c, "its hand-out failed in the agent", t);
    }
  }

  /** {@link #exit} without its guard (the negative control of the fail-closed test calls it). */
  static Connection exitUnguarded(int kind, Entry entry, Object self, Connection c) {
    if (entry == null) {
      // enter threw (so the depth was not counted): nothing says whether c is the application's
      return refuse(c, "the agent's enter advice failed", null);
    }
    Frame f = FRAME.get();
    if (f.depth > 0) {
      f.depth--;
    }
    if (c == null) {
      return null;
    }
    if (kind == DRIVER) {
      f.physicalMade++;
      PHYSICAL_CLASSES.add(c.getClass());
      if (log.isDebugEnabled()) {
        // one line per physical connection: the tests count them to see a pool churn
        log.debug(
            "physical connection {} opened on thread {}{}",
            c.getClass().getName(),
            Thread.currentThread().getName(),
            entry.fence() ? " (outermost: fenced)" : f.scopes > 0 ? " in " + f.scope : "");
      }
    }
    if (entry.firstInScope()
        && kind == DATA_SOURCE
        && f.physicalMade == entry.physicalMadeBefore()
        && !PHYSICAL_CLASSES.contains(c.getClass())) {
      return handOutInsideScope(f, self, c);
    }
    if (entry.firstInScope() && f.configuredScopes > 0 && MARKS_SCOPE_CONNECTIONS) {
      MARKS.put(c, f.configuredScope);
    }
    if (!entry.fence()) {
      return c; // a physical connection: the pool's own
    }
    if (kind == POOLED && self instanceof javax.sql.XAConnection) {
      Connection handle = XaTracking.handle((javax.sql.XAConnection) self, c);
      Connection fenced = fence(handle);
      XaTracking.fenced(handle, fenced);
      return fenced;
    }
    return fence(c);
  }

  /** Fail closed: {@code c} (if any) closed, a connection that refuses every statement instead. */
  private static Connection refuse(Connection c, String why, Throwable t) {
    if (c == null) {
      return null;
    }
    log.error(
        "{} for a connection of {}; handing out a connection that refuses every statement",
        why,
        c.getClass().getName(),
        t);
    closeQuietly(c);
    return RefusingConnection.create(
        "lease-agent could not fence this connection: " + why + (t == null ? "" : ": " + t));
  }

  private static Connection fence(Connection c) {
    UnaryOperator<Connection> wrap = fencer;
    if (wrap == null) {
      return c;
    }
    try {
      Connection fenced = wrap.apply(c);
      if (log.isDebugEnabled()) {
        log.debug(
            "handing out {} for {}",
            fenced == c ? "an already fenced connection" : "a fenced connection",
            c.getClass().getName());
      }
      return fenced;
    } catch (Throwable t) {
      // Fail closed here, not in the advice (checklist 36): an unfenced connection handed to a
      // fenced application is the one outcome this agent exists to prevent.
      log.error(
          "could not fence a connection of {}; handing out a connection that refuses every"
              + " statement",
          c.getClass().getName(),
          t);
      closeQuietly(c);
      return RefusingConnection.create("lease-agent could not fence this connection: " + t);
    }
  }

  /**
   * A DataSource handed out, inside a physical scope, a connection that no driver made: the scope
   * encloses a pool's hand-out, so the application would get it unfenced.
   */
  private static Connection handOutInsideScope(Frame f, Object self, Connection c) {
    String scope = f.scope;
    String message =
        (f.configured ? "pool-internals entry " : "built-in pool rule ")
            + scope
            + " encloses "
            + (self == null ? "a DataSource" : self.getClass().getName())
            + ".getConnection, which handed out a "
            + c.getClass().getName()
            + " that no JDBC driver made: a pool's connection for the application, which would run"
            + " UNFENCED. pool-internals must name the method that opens the pool's physical"
            + " connections (for example org.apache.commons.dbcp2.PoolableConnectionFactory"
            + "#makeObject), never one the application's connections pass through; remove "
            + scope
            + " from pool-internals";
    if (haltOnUnfenced) {
      LeaseAgent.stop(LeaseAgent.EXIT_CONFIGURATION, message);
    }
    if (REPORTED.putIfAbsent(scope, Boolean.TRUE) == null) {
      log.error(
          "{} (on-unfenced=log: running on; hand-outs found inside the scope are fenced, a cold"
              + " pool's first ones may not be)",
          message);
    }
    return fence(c);
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (Throwable ignored) {
      // best effort
    }
  }

  /**
   * Agent-internal: the enter advice of a physical scope (connections made inside are the pool's
   * own, never fenced). Public only because the advice is inlined into pool classes; without this
   * JVM's key, bound into the advice, it does nothing.
   */
  public static void enterPhysicalScope(String scope, boolean configured, long key) {
    if (key != KEY) {
      forged("enterPhysicalScope(" + scope + ")");
      return;
    }
    Frame f = FRAME.get();
    if (f.scopes++ == 0) {
      f.scope = scope;
      f.configured = configured;
    }
    if (configured && f.configuredScopes++ == 0) {
      f.configuredScope = scope;
    }
  }

  /** Agent-internal: the exit advice of a physical scope; without this JVM's key, nothing. */
  public static void exitPhysicalScope(boolean configured, long key) {
    if (key != KEY) {
      forged("exitPhysicalScope");
      return;
    }
    Frame f = FRAME.get();
    if (configured && f.configuredScopes > 0 && --f.configuredScopes == 0) {
      f.configuredScope = null;
    }
    // never below zero: an unmatched exit must not leave the thread inside a scope for ever
    if (f.scopes > 0 && --f.scopes == 0) {
      f.scope = null;
      f.configured = false;
    }
  }

  /** A call of an agent-internal entry point without the key: ignored, reported once. */
  private static void forged(String what) {
    if (REPORTED.putIfAbsent("forged " + what, Boolean.TRUE) == null) {
      log.error(
          "ConnectionFencing.{} called without the agent's key (not by the agent's advice):"
              + " ignored; it is agent-internal and cannot switch fencing off",
          what,
          new Throwable("the caller"));
    }
  }

  /**
   * Enter advice of every JDBC connection class's {@code createStatement}, {@code prepareStatement}
   * and {@code prepareCall}: a connection that a configured scope made ({@link #MARKS}) must not
   * run statements unfenced under a lease. Its first statement outside any scope (and outside any
   * advised connection call, where pools validate on borrow) must come through a fenced connection
   * (a lease-jdbc frame on the stack): then it is the pool's physical connection under the
   * application's fenced one, and is no longer checked. Otherwise the entry let the application (or
   * a pool test that no entry names) use it unfenced: the JVM stops (status 78), or with {@code
   * on-unfenced=log} an error is logged once per entry.
   */
  public static void statementOn(Object connection) {
    if (MARKS.isEmpty()) {
      return; // the common case: no configured scope ever returned a connection
    }
    Frame f = FRAME.get();
    if (f.scopes > 0 || f.depth > 0) {
      return; // the pool's own work: inside its scopes, or inside a hand-out (test on borrow)
    }
    String scope = MARKS.get(connection);
    if (scope == null) {
      return;
    }
    if (dev.lease.core.LeaseContext.current().isEmpty()) {
      return; // no lease: a fenced connection would run it as it is; checked under a lease
    }
    MARKS.remove(connection);
    if (throughFence()) {
      return; // the pool's physical connection, under a fenced connection of the application
    }
    String message =
        "pool-internals entry "
            + scope
            + " returned a "
            + connection.getClass().getName()
            + " that then ran a statement on thread "
            + Thread.currentThread().getName()
            + " outside every pool-internals method and not through a fenced connection: the"
            + " application's connection, UNFENCED, or a pool test that no entry names."
            + " pool-internals must name only the methods where the pool opens and tests its"
            + " physical connections (all of them); remove "
            + scope
            + " from pool-internals if the application gets its connections inside it";
    if (haltOnUnfenced) {
      LeaseAgent.stop(LeaseAgent.EXIT_CONFIGURATION, message);
    }
    if (REPORTED.putIfAbsent("statement " + scope, Boolean.TRUE) == null) {
      log.error("{} (on-unfenced=log: running on, UNFENCED)", message);
    }
  }

  /** Is a fenced connection (lease-jdbc, or the agent's vendor face over one) on the stack? */
  private static boolean throughFence() {
    return StackWalker.getInstance()
        .walk(
            frames ->
                frames.anyMatch(
                    fr -> {
                      String n = fr.getClassName();
                      return n.startsWith("dev.lease.jdbc.")
                          || n.equals(VendorFace.class.getName());
                    }));
  }

  /** Runs {@code work} with connections unfenced: the agent's own lease connections. */
  static <T, E extends Exception> T unfenced(ThrowingSupplier<T, E> work) throws E {
    enterPhysicalScope("lease-agent#leaseDatabase", false, KEY);
    try {
      return work.get();
    } finally {
      exitPhysicalScope(false, KEY);
    }
  }

  @FunctionalInterface
  interface ThrowingSupplier<T, E extends Exception> {
    T get() throws E;
  }
}
