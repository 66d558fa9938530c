package dev.lease.agent;

import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.lang.ref.SoftReference;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.dynamic.TypeResolutionStrategy;
import net.bytebuddy.dynamic.scaffold.TypeValidation;
import net.bytebuddy.implementation.Implementation;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.matcher.ElementMatchers;
import net.bytebuddy.pool.TypePool;

/**
 * The agent's class file transformer (issue 37): it decides by name and by a search of the class
 * file's bytes first ({@link JdbcPrefilter}), describes only what is left from its class file (a
 * type pool cached per class loader, never by loading a class), and hands a class that a {@link
 * Rule} matches to ByteBuddy to decorate: advice inlined into the class file as it is, no member
 * added, no class format change. ByteBuddy's {@code AgentBuilder} did the same through a
 * transformer class it generates at install (466 classes loaded for it, a third of the agent's
 * start); this class is that part written for what the agent needs.
 *
 * <p>Fail closed stays with the caller: a class that a rule started to weave and that then failed
 * is reported to {@link Listener#failed}, a class loaded before the agent whose woven class file
 * the JVM refused at retransformation to {@link Listener#refused}.
 */
final class ClassWeaver implements ClassFileTransformer {

  /** What a rule does to a type it matches: decorates the builder (advice, checks). */
  interface Step {
    DynamicType.Builder<?> apply(
        DynamicType.Builder<?> b, TypeDescription type, ClassLoader loader);
  }

  /**
   * A rule: the types and class loaders it applies to, and its step. Every rule that matches a type
   * applies, in the order given.
   */
  record Rule(
      ElementMatcher<? super TypeDescription> types,
      ElementMatcher<? super ClassLoader> loaders,
      Step step) {}

  /** Hears what happened to the classes the rules matched. */
  interface Listener {
    void woven(TypeDescription type, boolean retransformed);

    /** A class could not be described or woven; {@code type} is its binary name. */
    void failed(String type, ClassLoader loader, Throwable error);

    /** A class loaded before the agent was woven, and the JVM refused the woven class file. */
    void refused(Class<?> type, Throwable error);
  }

  private final List<Rule> rules;
  private final JdbcPrefilter.Decision prefilter;
  private final Listener listener;

  /** Advice only: no auxiliary members, no type initialiser changes, no validation. */
  private final ByteBuddy byteBuddy =
      new ByteBuddy()
          .with(TypeValidation.DISABLED)
          .with(Implementation.Context.Disabled.Factory.INSTANCE);

  /**
   * Type descriptions per class loader. The descriptions reach their loader (through the pool that
   * made them), so the cache is held softly: a discarded loader (an undeployed web application) is
   * not kept by the agent once memory runs short; ByteBuddy's own cache held it for good.
   */
  private final Map<ClassLoader, SoftReference<TypePool.CacheProvider>> pools = new WeakHashMap<>();

  /**
   * Set while this thread weaves: a class loaded by the weaving itself (ByteBuddy's, the agent's,
   * the JDK's, all of them ignored by name) is not examined again inside it.
   */
  private final ThreadLocal<Boolean> weaving = new ThreadLocal<>();

  /** Classes loaded before the agent whose class file this transformer changed. */
  private final Set<Class<?>> retransformedWoven = ConcurrentHashMap.newKeySet();

  ClassWeaver(List<Rule> rules, JdbcPrefilter.Decision prefilter, Listener listener) {
    this.rules = List.copyOf(rules);
    this.prefilter = prefilter;
    this.listener = listener;
  }

  /**
   * Registers this transformer, then retransforms the classes loaded before it that a rule may
   * weave. The candidates are taken after the registration, so a class whose load begins after it
   * is seen by the transformer and may be seen again in the list (harmless: a retransformation
   * hands this transformer the class file as it was first defined, not as woven). A load that began
   * before the registration and ended after the list was taken would be missed by both: the agent
   * calls this from {@code premain}, before the application's {@code main} and before any thread of
   * its own.
   */
  void install(Instrumentation inst, Supplier<Set<Class<?>>> loadedCandidates) {
    inst.addTransformer(this, true);
    for (Class<?> c : loadedCandidates.get()) {
      try {
        inst.retransformClasses(c);
      } catch (Throwable e) {
        if (retransformedWoven.contains(c)) {
          listener.refused(c, e);
        }
      }
    }
    retransformedWoven.clear();
  }

  @Override
  public byte[] transform(
      ClassLoader loader,
      String internalName,
      Class<?> redefined,
      ProtectionDomain domain,
      byte[] bytes) {
    if (internalName == null || loader == null || weaving.get() != null) {
      return null; // hidden classes, the boot loader, and classes the weaving itself loads
    }
    // a class loaded before the agent was chosen by JdbcPrefilter.loadedCandidates already
    if (redefined == null
        ? prefilter.passOver(loader, internalName, bytes)
        : JdbcPrefilter.Decision.ignored(loader, internalName)) {
      return null;
    }
    weaving.set(Boolean.TRUE);
    try {
      byte[] woven = weave(loader, internalName.replace('/', '.'), bytes, redefined != null);
      if (woven != null && redefined != null) {
        retransformedWoven.add(redefined);
      }
      return woven;
    } finally {
      weaving.remove();
    }
  }

  /**
   * The class file {@code bytes} of {@code name} with every matching rule applied, or null when no
   * rule matches or the weave failed (reported to the listener).
   */
  private byte[] weave(ClassLoader loader, String name, byte[] bytes, boolean retransformed) {
    try {
      ClassFileLocator locator =
          new ClassFileLocator.Compound(
              ClassFileLocator.Simple.of(name, bytes), ClassFileLocator.ForClassLoader.of(loader));
      // the type being woven is kept out of the shared cache: its class file is about to change
      TypePool pool =
          new TypePool.Default.WithLazyResolution(
              new TypePool.CacheProvider.Discriminating(
                  ElementMatchers.is(name), new TypePool.CacheProvider.Simple(), cacheOf(loader)),
              locator,
              TypePool.Default.ReaderMode.FAST);
      TypeDescription type = pool.describe(name).resolve();
      if (type.isSynthetic()) {
        return null;
      }
      List<Rule> matched = new ArrayList<>(2);
      for (Rule r : rules) {
        // the loader first: its guard is cached per loader, the type's hierarchy check is not, and
        // the agent's rules come in pairs that differ only in the loader
        if (r.loaders().matches(loader) && r.types().matches(type)) {
          matched.add(r);
        }
      }
      if (matched.isEmpty()) {
        return null;
      }
      DynamicType.Builder<?> b = byteBuddy.decorate(type, locator);
      for (Rule r : matched) {
        b = r.step().apply(b, type, loader);
      }
      byte[] woven = b.make(TypeResolutionStrategy.Disabled.INSTANCE, pool).getBytes();
      listener.woven(type, retransformed);
      return woven;
    } catch (Throwable e) {
      listener.failed(name, loader, e);
      return null;
    }
  }

  private TypePool.CacheProvider cacheOf(ClassLoader loader) {
    synchronized (pools) {
      SoftReference<TypePool.CacheProvider> kept = pools.get(loader);
      TypePool.CacheProvider cache = kept == null ? null : kept.get();
      if (cache == null) {
        cache = new TypePool.CacheProvider.Simple();
        pools.put(loader, new SoftReference<>(cache));
      }
      return cache;
    }
  }
}
