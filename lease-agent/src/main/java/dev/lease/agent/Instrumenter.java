package dev.lease.agent;

import static net.bytebuddy.matcher.ElementMatchers.hasSuperType;
import static net.bytebuddy.matcher.ElementMatchers.isAbstract;
import static net.bytebuddy.matcher.ElementMatchers.isMethod;
import static net.bytebuddy.matcher.ElementMatchers.isStatic;
import static net.bytebuddy.matcher.ElementMatchers.nameStartsWith;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.not;
import static net.bytebuddy.matcher.ElementMatchers.returns;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.lang.instrument.Instrumentation;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDefinition;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.pool.TypePool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Weaves the agent into the application (ByteBuddy; checklist points 34–36 of the JDBC anchors).
 *
 * <p>Where connections are handed out ({@link ConnectionAdvice}; the outermost call fences):
 *
 * <ul>
 *   <li>{@code getConnection()} / {@code getConnection(user, password)} of every concrete {@code
 *       javax.sql.DataSource}, and of every class a DataSource inherits them from that is not one
 *       itself (Tomcat JDBC's {@code DataSourceProxy}): the general rule, found when the DataSource
 *       subclass loads (its superclasses load after it);
 *   <li>{@code connect(url, properties)} of every {@code java.sql.Driver};
 *   <li>{@code getConnection()} of every {@code javax.sql.PooledConnection} and {@code
 *       XAConnection}: the handle the application gets from a pooled or XA connection.
 * </ul>
 *
 * <p>Physical scopes ({@link PoolInternalAdvice}; connections made inside are the pool's own and
 * never fenced): {@code getPooledConnection*} of every {@code ConnectionPoolDataSource}, {@code
 * getXAConnection*} of every {@code XADataSource} (pgjdbc's XA code casts the connection it opens
 * to its own type), the built-in methods of the pools in {@link #BUILT_IN_POOL_INTERNALS} (their
 * helper threads open and test connections there), and {@code pool-internals}.
 *
 * <p>Fail closed: a JDBC class that cannot be instrumented (its class loader cannot see the agent,
 * or weaving failed) stops the JVM with status 78, unless {@code on-unfenced=log} accepts the risk.
 *
 * <p>This class holds the rules; {@link ClassWeaver} is the transformer that applies them. Costs
 * stay in matching, not weaving (byte-buddy#959): the byte prefilter ({@link JdbcPrefilter}), a
 * cached type pool per class loader, a cached class-loader guard (can the loader see {@link
 * ConnectionFencing}?), name prefixes of the JDK and of the agent itself ignored outright. Classes
 * loaded before the agent that a rule may weave are retransformed at installation.
 */
final class Instrumenter {

  private static final Logger log = LoggerFactory.getLogger(Instrumenter.class);

  private static final String C3P0_MANAGER =
      "com.mchange.v2.c3p0.impl.C3P0PooledConnectionPool$1PooledConnectionResourcePoolManager";

  /**
   * Where the pools that legacy applications use open, test and evict their physical connections,
   * mostly on their own helper threads, outside any call of the application. Read from each pool's
   * source (versions in the pool table of docs/agent.md).
   */
  static final List<MethodSpec> BUILT_IN_POOL_INTERNALS =
      List.of(
          // HikariCP: the adder thread and pool start
          internal("com.zaxxer.hikari.pool.PoolBase#newConnection"),
          // Commons DBCP2: borrow, the evictor's ensureMinIdle, addObject
          internal("org.apache.commons.dbcp2.PoolableConnectionFactory#makeObject"),
          // Tomcat JDBC: connectUsingDriver / connectUsingDataSource
          internal("org.apache.tomcat.jdbc.pool.PooledConnection#connect"),
          // c3p0: its helper threads acquire (getPooledConnection) and test connections here
          internal(C3P0_MANAGER + "#acquireResource"),
          internal(C3P0_MANAGER + "#refurbishResourceOnCheckout"),
          internal(C3P0_MANAGER + "#refurbishResourceOnCheckin"),
          internal(C3P0_MANAGER + "#refurbishIdleResource"),
          internal(C3P0_MANAGER + "#destroyResource"),
          // Agroal: the housekeeping thread creates connections and takes their handle here
          internal("io.agroal.pool.ConnectionPool$CreateConnectionTask#call"),
          internal("io.agroal.pool.ConnectionFactory#createConnection"),
          internal("io.agroal.pool.ConnectionFactory#getRecoveryConnection"),
          // Oracle UCP: its connection factory adapters
          internal("oracle.ucp.jdbc.DriverConnectionFactoryAdapter#createConnection"),
          internal("oracle.ucp.jdbc.DataSourceConnectionFactoryAdapter#createConnection"),
          internal(
              "oracle.ucp.jdbc.ConnectionPoolDataSourceConnectionFactoryAdapter#createConnection"));

  /** Classes DataSources inherit getConnection from that are not DataSources themselves. */
  static final List<String> BUILT_IN_DATA_SOURCE_ANCESTORS =
      List.of("org.apache.tomcat.jdbc.pool.DataSourceProxy");

  private static final String DATA_SOURCE = "javax.sql.DataSource";
  private static final String DRIVER = "java.sql.Driver";
  private static final String POOLED_CONNECTION = "javax.sql.PooledConnection";
  private static final String CONNECTION_POOL_DATA_SOURCE = "javax.sql.ConnectionPoolDataSource";
  private static final String XA_DATA_SOURCE = "javax.sql.XADataSource";
  private static final String XA_CONNECTION = "javax.sql.XAConnection";

  /** getConnection() and getConnection(user, password). */
  private static final ElementMatcher.Junction<MethodDescription> GET_CONNECTION =
      isMethod()
          .and(not(isAbstract()))
          .and(returns(named("java.sql.Connection")))
          .and(
              named("getConnection")
                  .and(
                      takesArguments(0)
                          .or(
                              takesArguments(2)
                                  .and(takesArgument(0, String.class))
                                  .and(takesArgument(1, String.class)))));

  private static final ElementMatcher.Junction<MethodDescription> CONNECT =
      isMethod()
          .and(not(isAbstract()))
          .and(returns(named("java.sql.Connection")))
          .and(named("connect"))
          .and(takesArguments(2))
          .and(takesArgument(0, String.class));

  private static final ElementMatcher.Junction<MethodDescription> POOLED_GET_CONNECTION =
      isMethod()
          .and(not(isAbstract()))
          .and(returns(named("java.sql.Connection")))
          .and(named("getConnection"))
          .and(takesArguments(0));

  private static final ElementMatcher.Junction<MethodDescription> GET_POOLED_CONNECTION =
      isMethod()
          .and(not(isAbstract()))
          .and(nameStartsWith("getPooledConnection"))
          .and(returns(hasSuperType(named(POOLED_CONNECTION))));

  private static final ElementMatcher.Junction<MethodDescription> GET_XA_CONNECTION =
      isMethod()
          .and(not(isAbstract()))
          .and(nameStartsWith("getXAConnection"))
          .and(returns(hasSuperType(named(XA_CONNECTION))));

  private final AgentConfig config;
  private final boolean haltOnUnfenced;
  private final AgentRules rules = AgentRules.current();

  /** Superclasses of DataSources that declare getConnection (found as the subclass loads). */
  private final Set<String> ancestors = ConcurrentHashMap.newKeySet();

  /** Scopes per class name: class name -> method -> (scope key, configured). */
  private final Map<String, List<MethodSpec>> scopesByClass = new ConcurrentHashMap<>();

  private final Set<String> configuredKeys = new HashSet<>();

  /** The classes of {@code methods=}: woven whatever their class file mentions. */
  private final Set<String> methodClasses = new HashSet<>();

  /** Types being woven for fencing; an error for one of them stops the JVM. */
  private final Set<String> weaving = ConcurrentHashMap.newKeySet();

  private Instrumenter(AgentConfig config) {
    this.config = config;
    this.haltOnUnfenced = config.onUnfenced == AgentConfig.OnUnfenced.HALT;
    ancestors.addAll(rules.dataSourceAncestors());
    List<MethodSpec> internals = new ArrayList<>(rules.builtInPoolInternals());
    internals.addAll(config.poolInternals);
    for (MethodSpec m : config.poolInternals) {
      configuredKeys.add(m.key());
    }
    for (MethodSpec m : internals) {
      scopesByClass.computeIfAbsent(m.className(), k -> new ArrayList<>()).add(m);
    }
    for (MethodSpec m : config.methods) {
      methodClasses.add(m.className());
    }
  }

  private static MethodSpec internal(String key) {
    int hash = key.indexOf('#');
    return new MethodSpec(key.substring(0, hash), key.substring(hash + 1), "pool");
  }

  static void install(Instrumentation inst, AgentConfig config) {
    new Instrumenter(config).installOn(inst);
  }

  private void installOn(Instrumentation inst) {
    ElementMatcher<ClassLoader> seesAgent = new SeesAgent();
    ElementMatcher<TypeDescription> jdbcTypes = new JdbcTypes();
    List<ClassWeaver.Rule> weaves = new ArrayList<>();
    weaves.add(new ClassWeaver.Rule(jdbcTypes, seesAgent, this::weave));
    weaves.add(
        new ClassWeaver.Rule(
            jdbcTypes,
            not(seesAgent),
            new Unfenceable(
                (type, loader) ->
                    "JDBC class "
                        + type.getName()
                        + " (class loader "
                        + loader
                        + ") cannot see the agent's classes, so its connections cannot be"
                        + " fenced; put the application's JDBC classes in a class loader that"
                        + " delegates to the system class loader (see docs/agent.md,"
                        + " class-loader limits)")));
    if (!config.poolInternals.isEmpty()) {
      // only connections of configured scopes are ever checked (ConnectionFencing.statementOn):
      // without pool-internals nothing is woven for them
      weaves.add(new ClassWeaver.Rule(new ConnectionTypes(), seesAgent, this::weaveConnection));
    }
    for (MethodSpec m : config.methods) {
      Advice advice =
          adviceOf(
              Advice.withCustomMapping()
                  .bind(MethodLeaseAdvice.LeaseName.class, m.leaseName())
                  .bind(MethodLeaseAdvice.MethodKey.class, m.key()),
              MethodLeaseAdvice.class);
      ElementMatcher.Junction<MethodDescription> method = concreteMethod(m.methodName());
      weaves.add(
          new ClassWeaver.Rule(
              named(m.className()),
              seesAgent,
              (b, type, loader) -> checkMethod(b, m, type).visit(advice.on(method))));
      // the same class in a loader that cannot see the agent: its method would run without the
      // lease, on every replica at once
      weaves.add(
          new ClassWeaver.Rule(
              named(m.className()),
              not(seesAgent),
              new Unfenceable(
                  (type, loader) ->
                      "class "
                          + type.getName()
                          + " of methods="
                          + m.key()
                          + " (class loader "
                          + loader
                          + ") cannot see the agent's classes, so "
                          + m.methodName()
                          + " would run without its lease "
                          + m.leaseName()
                          + "; load it in a class loader that delegates to the system class"
                          + " loader (see docs/agent.md, class-loader limits)")));
    }
    new ClassWeaver(weaves, new JdbcPrefilter.Decision(this::namedByRules), new Errors())
        .install(
            inst,
            // taken after the transformer is registered: a JDBC class loaded meanwhile by another
            // thread is seen by one or the other
            () ->
                JdbcPrefilter.loadedCandidates(
                    inst, this::namedByRules, !config.poolInternals.isEmpty()));
  }

  /** Whether a rule or the configuration names the class {@code name} (a binary name). */
  private boolean namedByRules(String name) {
    return scopesByClass.containsKey(name)
        || ancestors.contains(name)
        || methodClasses.contains(name);
  }

  /** The types this agent weaves for fencing, or must refuse to run without. */
  private final class JdbcTypes implements ElementMatcher<TypeDescription> {
    @Override
    public boolean matches(TypeDescription type) {
      String name = type.getName();
      if (scopesByClass.containsKey(name) || ancestors.contains(name)) {
        return true;
      }
      if (type.isInterface()) {
        return false;
      }
      return type.isAssignableTo(javax.sql.DataSource.class)
          || type.isAssignableTo(java.sql.Driver.class)
          || type.isAssignableTo(javax.sql.PooledConnection.class)
          || type.isAssignableTo(javax.sql.ConnectionPoolDataSource.class)
          || type.isAssignableTo(javax.sql.XADataSource.class)
          || type.isAssignableTo(javax.transaction.xa.XAResource.class);
    }
  }

  /** Concrete JDBC connection classes (drivers' and pools'), for {@link StatementAdvice}. */
  private static final class ConnectionTypes implements ElementMatcher<TypeDescription> {
    @Override
    public boolean matches(TypeDescription type) {
      return !type.isInterface()
          && !type.getName().startsWith("dev.lease.")
          && type.isAssignableTo(java.sql.Connection.class);
    }
  }

  private static final ElementMatcher.Junction<MethodDescription> STATEMENT_FACTORIES =
      isMethod()
          .and(not(isAbstract()))
          .and(not(isStatic()))
          .and(named("createStatement").or(named("prepareStatement")).or(named("prepareCall")));

  private DynamicType.Builder<?> weaveConnection(
      DynamicType.Builder<?> b, TypeDescription type, ClassLoader loader) {
    return b.visit(new EveryDeclaredMethod(STATEMENT_FACTORIES, adviceOf(StatementAdvice.class)));
  }

  /** Applies every rule that holds for {@code type}. */
  private DynamicType.Builder<?> weave(
      DynamicType.Builder<?> b, TypeDescription type, ClassLoader loader) {
    String name = type.getName();
    weaving.add(name);
    rules.beforeWeaving(name);
    boolean dataSource = !type.isInterface() && type.isAssignableTo(javax.sql.DataSource.class);
    boolean ancestor = ancestors.contains(name);
    if (dataSource || ancestor) {
      b = b.visit(new EveryDeclaredMethod(GET_CONNECTION, advice(ConnectionFencing.DATA_SOURCE)));
      if (dataSource && rules.weavesInheritedGetConnection()) {
        recordAncestors(type);
      }
    }
    if (!type.isInterface() && type.isAssignableTo(java.sql.Driver.class)) {
      b = b.visit(new EveryDeclaredMethod(CONNECT, advice(ConnectionFencing.DRIVER)));
    }
    if (!type.isInterface() && type.isAssignableTo(javax.sql.PooledConnection.class)) {
      b = b.visit(new EveryDeclaredMethod(POOLED_GET_CONNECTION, advice(ConnectionFencing.POOLED)));
    }
    if (!type.isInterface() && type.isAssignableTo(javax.transaction.xa.XAResource.class)) {
      b =
          b.visit(
              new EveryDeclaredMethod(
                  isMethod().and(not(isAbstract())).and(named("start")).and(takesArguments(2)),
                  adviceOf(XaAdvice.Start.class)));
      ElementMatcher.Junction<MethodDescription> xidMethod =
          isMethod()
              .and(not(isAbstract()))
              .and(takesArgument(0, named("javax.transaction.xa.Xid")));
      b =
          b.visit(
              new EveryDeclaredMethod(
                  xidMethod.and(named("end")).and(takesArguments(2)),
                  adviceOf(XaAdvice.End.class)));
      b =
          b.visit(
              new EveryDeclaredMethod(
                  xidMethod.and(named("prepare")).and(takesArguments(1)),
                  adviceOf(XaAdvice.Prepare.class)));
      b =
          b.visit(
              new EveryDeclaredMethod(
                  xidMethod.and(named("commit")).and(takesArguments(2)),
                  adviceOf(XaAdvice.Commit.class)));
      b =
          b.visit(
              new EveryDeclaredMethod(
                  xidMethod.and(named("rollback").or(named("forget"))).and(takesArguments(1)),
                  adviceOf(XaAdvice.Finish.class)));
    }
    if (rules.scopesPooledAndXaConnections()) {
      if (type.isAssignableTo(javax.sql.ConnectionPoolDataSource.class)) {
        b = scope(b, type, GET_POOLED_CONNECTION, name + "#getPooledConnection", false);
      }
      if (type.isAssignableTo(javax.sql.XADataSource.class)) {
        b = scope(b, type, GET_XA_CONNECTION, name + "#getXAConnection", false);
      }
    }
    List<MethodSpec> scopes = scopesByClass.get(name);
    if (scopes != null) {
      for (MethodSpec m : scopes) {
        boolean configured = configuredKeys.contains(m.key());
        if (configured) {
          checkConfiguredScope(type, m, dataSource || ancestor);
        }
        b = scope(b, type, concreteMethod(m.methodName()), m.key(), configured);
      }
    }
    return b;
  }

  /** The hand-out advice per kind, made once (parsing the advice class is a cost per weave). */
  private static final Advice[] ADVICE = new Advice[3];

  static Advice advice(int kind) {
    synchronized (ADVICE) {
      if (ADVICE[kind] == null) {
        ADVICE[kind] = makeAdvice(kind);
      }
      return ADVICE[kind];
    }
  }

  private static Advice makeAdvice(int kind) {
    return adviceOf(
        Advice.withCustomMapping()
            .bind(ConnectionAdvice.Kind.class, kind)
            .bind(ConnectionAdvice.Key.class, ConnectionFencing.key()),
        ConnectionAdvice.class);
  }

  /** Where the advice classes' class files are read from: the agent's own class loader. */
  private static final ClassFileLocator ADVICE_CLASSES =
      ClassFileLocator.ForClassLoader.of(Instrumenter.class.getClassLoader());

  private static final TypePool ADVICE_POOL = TypePool.Default.of(ADVICE_CLASSES);

  /**
   * The advice of {@code advice}, described from its class file rather than by reflection (issue
   * 37): reflection on the advice methods' annotations made a proxy class per annotation type.
   */
  static Advice adviceOf(Advice.WithCustomMapping mapping, Class<?> advice) {
    return mapping.to(ADVICE_POOL.describe(advice.getName()).resolve(), ADVICE_CLASSES);
  }

  static Advice adviceOf(Class<?> advice) {
    return adviceOf(Advice.withCustomMapping(), advice);
  }

  private static DynamicType.Builder<?> scope(
      DynamicType.Builder<?> b,
      TypeDescription type,
      ElementMatcher<? super MethodDescription> methods,
      String key,
      boolean configured) {
    Advice advice =
        adviceOf(
            Advice.withCustomMapping()
                .bind(PoolInternalAdvice.Scope.class, key)
                .bind(PoolInternalAdvice.Configured.class, configured)
                .bind(ConnectionAdvice.Key.class, ConnectionFencing.key()),
            PoolInternalAdvice.class);
    return b.visit(new EveryDeclaredMethod(methods, advice));
  }

  /**
   * The general rule for inherited hand-outs: a DataSource whose getConnection comes from a
   * superclass that is not a DataSource (Tomcat JDBC's DataSourceProxy). Superclasses load after
   * the subclass that names them, so recording them here lets their own load weave them.
   */
  private void recordAncestors(TypeDescription type) {
    try {
      for (TypeDefinition s = type.getSuperClass(); s != null; s = s.getSuperClass()) {
        TypeDescription sup = s.asErasure();
        if (sup.getName().startsWith("java.") || sup.isAssignableTo(javax.sql.DataSource.class)) {
          continue;
        }
        if (!sup.getDeclaredMethods().filter(GET_CONNECTION).isEmpty()
            && ancestors.add(sup.getName())) {
          log.debug("{} hands out connections inherited from {}", type.getName(), sup.getName());
        }
      }
    } catch (RuntimeException e) {
      log.debug("could not read the superclasses of {}: {}", type.getName(), e.toString());
    }
  }

  /** A concrete method of that name: what {@code methods=} and {@code pool-internals} name. */
  private static ElementMatcher.Junction<MethodDescription> concreteMethod(String name) {
    return isMethod().and(named(name)).and(not(isAbstract()));
  }

  /** Whether {@code type} itself declares a concrete method {@code name} (not inherited). */
  private static boolean declares(TypeDescription type, String name) {
    return !type.getDeclaredMethods().filter(concreteMethod(name)).isEmpty();
  }

  /**
   * A {@code pool-internals} entry that names the method the application gets its connections from
   * would hand them out unfenced: bad configuration, found when the class loads.
   */
  private void checkConfiguredScope(TypeDescription type, MethodSpec m, boolean handsOut) {
    String problem = null;
    if (!declares(type, m.methodName())) {
      problem =
          "class "
              + type.getName()
              + " declares no concrete method "
              + m.methodName()
              + " (the method must be declared by that class, not inherited)";
    } else if ((handsOut && m.methodName().equals("getConnection"))
        || (type.isAssignableTo(java.sql.Driver.class) && m.methodName().equals("connect"))
        || (type.isAssignableTo(javax.sql.PooledConnection.class)
            && m.methodName().equals("getConnection"))) {
      problem =
          m.key()
              + " hands connections to the application: inside it they would never be fenced."
              + " Name the method that opens the pool's physical connections instead";
    }
    if (problem != null) {
      LeaseAgent.stop(
          LeaseAgent.EXIT_CONFIGURATION, "bad pool-internals entry '" + m.key() + "': " + problem);
    }
  }

  /**
   * Every agent class the inlined advice names (calls, parameter and local types): the woven class
   * resolves each by name from its own loader. One it could not resolve to the agent's class would
   * fail inside the suppressed advice, and the exit advice would hand out the driver's connection
   * unfenced: fail open. {@link SeesAgent} requires all of them.
   */
  static final List<Class<?>> ADVICE_REFERENCES =
      List.of(
          ConnectionFencing.class,
          ConnectionFencing.Entry.class,
          MethodLeases.class,
          XaTracking.class);

  /**
   * The class-loader guard: the instrumented class's loader must resolve every class of {@link
   * #ADVICE_REFERENCES} to the agent's own. Cached per loader (weakly, so that discarded loaders
   * can go).
   */
  private static final class SeesAgent implements ElementMatcher<ClassLoader> {
    private final Map<ClassLoader, Boolean> cache = new WeakHashMap<>();

    @Override
    public synchronized boolean matches(ClassLoader loader) {
      return cache.computeIfAbsent(loader, Instrumenter::seesAgent);
    }
  }

  /** Whether {@code loader} resolves every class the advice names to the agent's own. */
  static boolean seesAgent(ClassLoader loader) {
    for (Class<?> c : ADVICE_REFERENCES) {
      try {
        if (Class.forName(c.getName(), false, loader) != c) {
          return false;
        }
      } catch (ClassNotFoundException | LinkageError e) {
        return false;
      }
    }
    return true;
  }

  /** A JDBC class in a loader that cannot see the agent: its connections could not be fenced. */
  /**
   * A class the advice cannot reach (its loader does not see the agent): reported through {@link
   * #unfenced} with the message {@code why} gives, and left as it is.
   */
  private final class Unfenceable implements ClassWeaver.Step {
    private final BiFunction<TypeDescription, ClassLoader, String> why;

    Unfenceable(BiFunction<TypeDescription, ClassLoader, String> why) {
      this.why = why;
    }

    @Override
    public DynamicType.Builder<?> apply(
        DynamicType.Builder<?> b, TypeDescription type, ClassLoader loader) {
      unfenced(why.apply(type, loader));
      return b;
    }
  }

  /** Stops the JVM for a JDBC class that runs unfenced, or logs it with on-unfenced=log. */
  private void unfenced(String message) {
    if (haltOnUnfenced) {
      LeaseAgent.stop(
          LeaseAgent.EXIT_CONFIGURATION,
          message + "; to run it unfenced anyway, accept the risk with on-unfenced=log");
    }
    log.error("{}; it runs UNFENCED (on-unfenced=log)", message);
  }

  /**
   * A configured method that the class does not declare is a configuration error found late (the
   * class loads after start): the job would run unfenced, so the process stops.
   */
  private static DynamicType.Builder<?> checkMethod(
      DynamicType.Builder<?> b, MethodSpec spec, TypeDescription type) {
    if (!declares(type, spec.methodName())) {
      LeaseAgent.stop(
          LeaseAgent.EXIT_CONFIGURATION,
          "bad method spec '"
              + spec.key()
              + "="
              + spec.leaseName()
              + "': class "
              + type.getName()
              + " declares no concrete method "
              + spec.methodName()
              + "; fix methods= (the method must be declared by that class, not"
              + " inherited)");
    } else {
      log.info("methods mode: {} runs under lease {}", spec.key(), spec.leaseName());
    }
    return b;
  }

  /**
   * A JDBC class whose weaving failed would run unfenced: that stops the JVM (fail closed). Errors
   * for other classes (a type the pool cannot describe while matching) are logged.
   */
  private final class Errors implements ClassWeaver.Listener {
    @Override
    public void woven(TypeDescription type, boolean retransformed) {
      weaving.remove(type.getName());
      log.debug("instrumented {}{}", type.getName(), retransformed ? " (retransformed)" : "");
    }

    @Override
    public void failed(String type, ClassLoader loader, Throwable error) {
      if (weaving.remove(type)) {
        unfenced(
            "could not instrument JDBC class " + type + " (class loader " + loader + "): " + error);
      } else {
        log.warn("could not examine {} for instrumentation: {}", type, error.toString());
      }
    }

    @Override
    public void refused(Class<?> type, Throwable error) {
      unfenced(
          "the JVM refused the instrumented JDBC class "
              + type.getName()
              + " (loaded before the agent, class loader "
              + type.getClassLoader()
              + "): "
              + error);
    }
  }
}
