package dev.lease.agent;

import static net.bytebuddy.matcher.ElementMatchers.hasSuperType;
import static net.bytebuddy.matcher.ElementMatchers.isAbstract;
import static net.bytebuddy.matcher.ElementMatchers.isInterface;
import static net.bytebuddy.matcher.ElementMatchers.isMethod;
import static net.bytebuddy.matcher.ElementMatchers.isSynthetic;
import static net.bytebuddy.matcher.ElementMatchers.nameStartsWith;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.not;
import static net.bytebuddy.matcher.ElementMatchers.returns;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.lang.instrument.Instrumentation;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.dynamic.scaffold.TypeValidation;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.pool.TypePool;
import net.bytebuddy.utility.JavaModule;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Weaves the agent into the application (ByteBuddy; checklist points 34–36 of the JDBC anchors):
 *
 * <ul>
 *   <li>every concrete {@code javax.sql.DataSource#getConnection} and {@code
 *       java.sql.Driver#connect} gets {@link ConnectionAdvice}: the outermost call hands out a
 *       fenced connection;
 *   <li>a pool's own connection factory gets {@link PoolInternalAdvice} (HikariCP's {@code
 *       PoolBase#newConnection} built in, more with {@code pool-internals});
 *   <li>in methods mode, each configured method gets {@link MethodLeaseAdvice}.
 * </ul>
 *
 * <p>lease-jdbc's own FencedDataSource and FencedDriver are woven like any other: when the
 * application uses them itself, they are the outermost call, their connection already is fenced,
 * and {@code FencedConnections.wrap} hands it back unchanged, so the pool below is never wrapped.
 *
 * <p>Costs stay in matching, not weaving (byte-buddy#959): a cached type pool per class loader, a
 * cached class-loader guard (can the loader see {@link ConnectionFencing}?) before any type
 * matcher, name prefixes of the JDK and of the agent itself ignored outright. RETRANSFORMATION also
 * weaves classes loaded before the agent (the lease database's own driver, loaded during start).
 */
final class Instrumenter {

  private static final Logger log = LoggerFactory.getLogger(Instrumenter.class);

  /** HikariCP creates its physical connections here, on its adder thread and at pool start. */
  static final List<MethodSpec> BUILT_IN_POOL_INTERNALS =
      List.of(new MethodSpec("com.zaxxer.hikari.pool.PoolBase", "newConnection", "pool"));

  private static final ElementMatcher.Junction<TypeDescription> IGNORED =
      nameStartsWith("java.")
          .or(nameStartsWith("javax."))
          .or(nameStartsWith("jdk."))
          .or(nameStartsWith("sun."))
          .or(nameStartsWith("com.sun."))
          .or(nameStartsWith("net.bytebuddy."))
          .or(nameStartsWith("dev.lease.agent."))
          .or(nameStartsWith("dev.lease.core."))
          .or(isSynthetic());

  private static final ElementMatcher.Junction<TypeDescription> JDBC_ENTRY_POINTS =
      not(isInterface())
          .and(
              hasSuperType(named("javax.sql.DataSource"))
                  .or(hasSuperType(named("java.sql.Driver"))));

  /** getConnection() and getConnection(user, password); connect(url, properties). */
  private static final EveryDeclaredMethod CONNECTION_METHODS =
      new EveryDeclaredMethod(
          isMethod()
              .and(not(isAbstract()))
              .and(returns(named("java.sql.Connection")))
              .and(
                  named("getConnection")
                      .or(
                          named("connect")
                              .and(takesArguments(2))
                              .and(takesArgument(0, String.class)))),
          Advice.to(ConnectionAdvice.class));

  private Instrumenter() {}

  static void install(Instrumentation inst, AgentConfig config) {
    ElementMatcher<ClassLoader> seesAgent = new SeesAgent();
    // no validation of generated types: advice only adds code to existing methods
    AgentBuilder builder =
        new AgentBuilder.Default(new ByteBuddy().with(TypeValidation.DISABLED))
            .disableClassFormatChanges()
            // advice only: decorate the class file as it is, no method registry or rebasing
            .with(AgentBuilder.TypeStrategy.Default.DECORATE)
            // describe types from the class files (cached pool), never by loading them
            .with(AgentBuilder.DescriptionStrategy.Default.POOL_ONLY)
            .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
            .with(
                new AgentBuilder.PoolStrategy.WithTypePoolCache.Simple(
                    TypePool.Default.ReaderMode.FAST, new ConcurrentHashMap<>()))
            .with(new Errors())
            // each ignore() replaces the previous one (skywalking#1912): one combined matcher
            .ignore(
                (type, loader, module, redefined, domain) ->
                    loader == null
                        || loader == ClassLoader.getPlatformClassLoader()
                        || IGNORED.matches(type))
            .type(JDBC_ENTRY_POINTS, seesAgent)
            .transform((b, type, loader, module, domain) -> b.visit(CONNECTION_METHODS))
            .type(JDBC_ENTRY_POINTS, not(seesAgent))
            .transform(new Unfenceable());

    List<MethodSpec> internals = new ArrayList<>(BUILT_IN_POOL_INTERNALS);
    internals.addAll(config.poolInternals);
    for (MethodSpec m : internals) {
      builder =
          builder
              .type(named(m.className()), seesAgent)
              .transform(
                  new AgentBuilder.Transformer.ForAdvice()
                      .include(Instrumenter.class.getClassLoader())
                      .advice(
                          isMethod().and(named(m.methodName())).and(not(isAbstract())),
                          PoolInternalAdvice.class.getName()));
    }
    for (MethodSpec m : config.methods) {
      builder =
          builder
              .type(named(m.className()), seesAgent)
              .transform(new MethodCheck(m))
              .transform(
                  new AgentBuilder.Transformer.ForAdvice(
                          Advice.withCustomMapping()
                              .bind(MethodLeaseAdvice.LeaseName.class, m.leaseName())
                              .bind(MethodLeaseAdvice.MethodKey.class, m.key()))
                      .include(Instrumenter.class.getClassLoader())
                      .advice(
                          isMethod().and(named(m.methodName())).and(not(isAbstract())),
                          MethodLeaseAdvice.class.getName()));
    }
    builder.installOn(inst);
  }

  /**
   * The class-loader guard: inlined advice calls {@link ConnectionFencing} and {@link MethodLeases}
   * by name from the instrumented class, so its loader must resolve them to the agent's own
   * classes. Cached per loader (weakly, so that discarded loaders can go).
   */
  private static final class SeesAgent implements ElementMatcher<ClassLoader> {
    private final Map<ClassLoader, Boolean> cache = new WeakHashMap<>();

    @Override
    public synchronized boolean matches(ClassLoader loader) {
      return cache.computeIfAbsent(loader, SeesAgent::check);
    }

    private static boolean check(ClassLoader loader) {
      try {
        return Class.forName(ConnectionFencing.class.getName(), false, loader)
            == ConnectionFencing.class;
      } catch (ClassNotFoundException | LinkageError e) {
        return false;
      }
    }
  }

  /** For JDBC classes in a loader that cannot see the agent: say loudly that they stay unfenced. */
  private static final class Unfenceable implements AgentBuilder.Transformer {
    @Override
    public DynamicType.Builder<?> transform(
        DynamicType.Builder<?> b,
        TypeDescription type,
        ClassLoader loader,
        JavaModule module,
        java.security.ProtectionDomain domain) {
      log.error(
          "{} (class loader {}) cannot see the agent's classes, so its connections are NOT"
              + " fenced; put the application's JDBC classes in a loader that delegates to the system"
              + " class loader (see the README's class-loader limits)",
          type.getName(),
          loader);
      return b;
    }
  }

  /**
   * A configured method that the class does not declare is a configuration error found late (the
   * class loads after start): the job would run unfenced, so the process stops.
   */
  private static final class MethodCheck implements AgentBuilder.Transformer {
    private final MethodSpec spec;

    MethodCheck(MethodSpec spec) {
      this.spec = spec;
    }

    @Override
    public DynamicType.Builder<?> transform(
        DynamicType.Builder<?> b,
        TypeDescription type,
        ClassLoader loader,
        JavaModule module,
        java.security.ProtectionDomain domain) {
      boolean declared =
          !type.getDeclaredMethods()
              .filter(isMethod().and(named(spec.methodName())).and(not(isAbstract())))
              .isEmpty();
      if (!declared) {
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
  }

  /** Instrumentation errors are logged; the class then loads as it was. */
  private static final class Errors extends AgentBuilder.Listener.Adapter {
    @Override
    public void onTransformation(
        TypeDescription type,
        ClassLoader loader,
        JavaModule module,
        boolean loaded,
        DynamicType dynamicType) {
      log.debug("instrumented {}{}", type.getName(), loaded ? " (retransformed)" : "");
    }

    @Override
    public void onError(
        String typeName,
        ClassLoader loader,
        JavaModule module,
        boolean loaded,
        Throwable throwable) {
      log.error("could not instrument {}; it runs as it was: {}", typeName, throwable.toString());
    }
  }
}
