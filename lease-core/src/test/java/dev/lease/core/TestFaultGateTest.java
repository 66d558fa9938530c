package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.internal.GroupInternals;
import dev.lease.core.internal.GroupRules;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.LifecycleRules;
import dev.lease.core.internal.SqlRules;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.net.URLClassLoader;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Issues 21 and 23: {@link LeaseInternals#sqlRulesForTesting}, {@link
 * LeaseInternals#rulesForTesting} and {@link GroupInternals#rulesForTesting} ship in the jar but
 * break nothing in production: without a test marker on the class path they are refused. Beside
 * each, the control: with the marker (test support is on this test's class path) it is honoured.
 */
class TestFaultGateTest {

  /** Never asked: nothing is built. */
  private static final DataSource NO_DATABASE =
      (DataSource)
          Proxy.newProxyInstance(
              ClassLoader.getPlatformClassLoader(),
              new Class<?>[] {DataSource.class},
              (proxy, method, args) -> {
                throw new UnsupportedOperationException(method.getName());
              });

  @Test
  void withoutATestMarkerWeakenedRulesAreRefused() throws Exception {
    refusedWithoutAMarker(LeaseInternals.class, "rulesForTesting", LifecycleRules.class);
  }

  @Test
  void withoutATestMarkerWeakenedSqlIsRefused() throws Exception {
    refusedWithoutAMarker(LeaseInternals.class, "sqlRulesForTesting", SqlRules.class);
  }

  /**
   * Issue 21: {@link GroupInternals#rulesForTesting} weakens no production group, refused before it
   * looks at the builder. Its control, the hook honoured in this test JVM, is every group test's
   * negative control built with {@code WeakenedGroup.applyTo} (each one is caught).
   */
  @Test
  void withoutATestMarkerWeakenedGroupRulesAreRefused() throws Exception {
    refusedWithoutAMarker(GroupInternals.class, "rulesForTesting", GroupRules.class);
  }

  /**
   * {@code internals.hook(builder, rules.PRODUCTION)} in a class loader with lease-core's and
   * SLF4J's jars only (no test marker): refused, naming the rules. Any implementation is refused,
   * even the production rules: the gate is the JVM, not them.
   */
  private static void refusedWithoutAMarker(Class<?> internalsType, String hook, Class<?> rules)
      throws Exception {
    URL[] production = {location(Lease.class), location(LoggerFactory.class)};
    try (URLClassLoader app =
        new URLClassLoader(production, ClassLoader.getPlatformClassLoader())) {
      Class<?> internals = Class.forName(internalsType.getName(), true, app);
      Class<?> rulesType = Class.forName(rules.getName(), true, app);
      Method method = null;
      for (Method m : internals.getMethods()) {
        if (m.getName().equals(hook) && m.getParameterTypes()[1] == rulesType) {
          method = m;
        }
      }
      Class<?> builderType = method.getParameterTypes()[0];
      Object builder =
          builderType.getName().equals(LeaseManager.Builder.class.getName())
              ? Class.forName(LeaseManager.class.getName(), true, app)
                  .getMethod("builder", DataSource.class)
                  .invoke(null, NO_DATABASE)
              : null;
      Object productionRules = rulesType.getField("PRODUCTION").get(null);
      Method call = method;
      InvocationTargetException e =
          assertThrows(
              InvocationTargetException.class, () -> call.invoke(null, builder, productionRules));
      IllegalStateException refused = assertInstanceOf(IllegalStateException.class, e.getCause());
      assertTrue(refused.getMessage().contains(rules.getSimpleName()), refused.getMessage());
      assertTrue(refused.getMessage().contains("refused"), refused.getMessage());
    }
  }

  @Test
  void withTheMarkerWeakenedRulesAreHonoured() {
    LeaseManager.Builder b = LeaseManager.builder(NO_DATABASE);
    assertSame(b, LeaseInternals.rulesForTesting(b, WeakenedLifecycle.policyNotOnce()));
  }

  @Test
  void withTheMarkerWeakenedSqlIsHonoured() {
    LeaseManager.Builder b = LeaseManager.builder(NO_DATABASE);
    assertSame(b, LeaseInternals.sqlRulesForTesting(b, WeakenedSql.termFromZero()));
  }

  private static URL location(Class<?> c) {
    return c.getProtectionDomain().getCodeSource().getLocation();
  }
}
