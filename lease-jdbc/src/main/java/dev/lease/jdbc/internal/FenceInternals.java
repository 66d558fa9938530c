package dev.lease.jdbc.internal;

import dev.lease.jdbc.FencingOptions;
import java.sql.Connection;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * What lease-agent and lease's own tests need from lease-jdbc and applications must not call:
 * resetting a fence whose transaction ended outside its connection (an XA branch; any code that
 * could call it could make a fence forget a refused or poisoned transaction, so it is not on {@code
 * FencedConnections}), and the guarded entry of the negative controls' weakened {@link FenceRules}.
 *
 * <p><b>Not API.</b> It may change in any release. How: the "shared secrets" pattern, as
 * lease-core's {@code LeaseInternals}: {@code dev.lease.jdbc} registers the operation when its
 * fenced connection class loads, and {@code FencingOptions} the rules' setter when it loads.
 */
public final class FenceInternals {

  /** Classes only lease's test support and conformance runner contain. */
  static final List<String> TEST_MARKERS =
      List.of(
          "dev.lease.testing.WeakenedFencesAllowed", "dev.lease.conformance.WeakenedFencesAllowed");

  private static volatile Consumer<Connection> endedElsewhere;
  private static volatile BiConsumer<FencingOptions.Builder, FenceRules> rulesSetter;

  private FenceInternals() {}

  /**
   * Called once, by {@code dev.lease.jdbc} when its fenced connection class is initialised.
   *
   * @throws IllegalStateException if called again, or from another package
   */
  public static void register(Consumer<Connection> implementation) {
    if (!implementation.getClass().getName().startsWith("dev.lease.jdbc.FencingConnection")
        || implementation.getClass().getClassLoader() != FenceInternals.class.getClassLoader()) {
      throw new IllegalStateException("only lease-jdbc registers its internal access");
    }
    synchronized (FenceInternals.class) {
      if (endedElsewhere != null) {
        throw new IllegalStateException("lease-jdbc's internal access is already registered");
      }
      endedElsewhere = implementation;
    }
  }

  /**
   * The transaction of a fenced connection ended outside the connection: an XA branch was ended,
   * prepared, committed or rolled back through its {@code XAResource}. Its verified or poisoned
   * state is forgotten, so the next transaction on the connection verifies again. For the agent's
   * XA support; a no-op for connections that are not fenced.
   */
  public static void transactionEndedElsewhere(Connection connection) {
    Consumer<Connection> hook = endedElsewhere;
    if (hook == null) {
      try {
        Class.forName(
            "dev.lease.jdbc.FencingConnection", true, FenceInternals.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException("lease-jdbc is incomplete: no FencingConnection", e);
      }
      hook = endedElsewhere;
      if (hook == null) {
        throw new IllegalStateException("lease-jdbc did not register its internal access");
      }
    }
    hook.accept(connection);
  }

  /**
   * Called once, by {@code dev.lease.jdbc.FencingOptions} when it is initialised.
   *
   * @throws IllegalStateException if called again, or from another class
   */
  public static void registerRules(BiConsumer<FencingOptions.Builder, FenceRules> setter) {
    if (!setter.getClass().getName().startsWith("dev.lease.jdbc.FencingOptions")
        || setter.getClass().getClassLoader() != FenceInternals.class.getClassLoader()) {
      throw new IllegalStateException("only lease-jdbc registers its rules' setter");
    }
    synchronized (FenceInternals.class) {
      if (rulesSetter != null) {
        throw new IllegalStateException("lease-jdbc's rules' setter is already registered");
      }
      rulesSetter = setter;
    }
  }

  /**
   * Negative controls of lease's own tests only: {@code builder} builds fences that run {@code
   * rules} (deliberately weakened: one mechanism switched off) in place of {@link
   * FenceRules#PRODUCTION}, and every connection they fence logs at ERROR that it is DELIBERATELY
   * WEAKENED. Honoured only with lease's test support or conformance runner on the class path, so
   * no production fence can be weakened.
   *
   * @return {@code builder}
   * @throws IllegalStateException anywhere else
   */
  public static FencingOptions.Builder rulesForTesting(
      FencingOptions.Builder builder, FenceRules rules) {
    if (!testJvm(FenceInternals.class.getClassLoader())) {
      throw new IllegalStateException(
          "weakened FenceRules ("
              + rules.getClass().getName()
              + ") deliberately break lease-jdbc's fence (negative controls of lease's own tests);"
              + " they are honoured only with lease's test support or conformance runner on the"
              + " class path, and refused here: build FencingOptions without them");
    }
    BiConsumer<FencingOptions.Builder, FenceRules> setter = rulesSetter;
    if (setter == null) {
      FencingOptions.defaults(); // initialises FencingOptions, which registers the setter
      setter = rulesSetter;
      if (setter == null) {
        throw new IllegalStateException("lease-jdbc did not register its rules' setter");
      }
    }
    setter.accept(builder, rules);
    return builder;
  }

  /**
   * Whether {@code loader} sees a test-only marker. lease-agent's jar carries none: its child-JVM
   * tests put test support on the application's class path, which loads the agent's classes too.
   */
  static boolean testJvm(ClassLoader loader) {
    for (String marker : TEST_MARKERS) {
      if (present(marker, loader)) {
        return true;
      }
    }
    return false;
  }

  private static boolean present(String name, ClassLoader loader) {
    try {
      Class.forName(name, false, loader);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }
}
