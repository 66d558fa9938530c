package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.LifecycleRules;
import dev.lease.core.internal.SqlRules;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.net.URLClassLoader;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Issue 23: {@link LeaseInternals#sqlRulesForTesting} and {@link LeaseInternals#rulesForTesting}
 * ship in the jar but break nothing in production: without a test marker on the class path they are
 * refused. Beside each, the control: with the marker (test support is on this test's class path) it
 * is honoured.
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
  void withoutATestMarkerWeakenedSqlIsRefused() throws Exception {
    URL[] production = {location(Lease.class), location(LoggerFactory.class)};
    try (URLClassLoader app =
        new URLClassLoader(production, ClassLoader.getPlatformClassLoader())) {
      Class<?> manager = Class.forName(LeaseManager.class.getName(), true, app);
      Class<?> builderType = Class.forName(LeaseManager.Builder.class.getName(), true, app);
      Class<?> internals = Class.forName(LeaseInternals.class.getName(), true, app);
      Class<?> rulesType = Class.forName(SqlRules.class.getName(), true, app);
      // any implementation is refused, even the production rules: the gate is the JVM, not them
      Object rules = rulesType.getField("PRODUCTION").get(null);
      Object builder = manager.getMethod("builder", DataSource.class).invoke(null, NO_DATABASE);
      InvocationTargetException e =
          assertThrows(
              InvocationTargetException.class,
              () ->
                  internals
                      .getMethod("sqlRulesForTesting", builderType, rulesType)
                      .invoke(null, builder, rules));
      IllegalStateException refused = assertInstanceOf(IllegalStateException.class, e.getCause());
      assertTrue(refused.getMessage().contains("SqlRules"), refused.getMessage());
      assertTrue(refused.getMessage().contains("refused"), refused.getMessage());
    }
  }

  @Test
  void withoutATestMarkerWeakenedRulesAreRefused() throws Exception {
    URL[] production = {location(Lease.class), location(LoggerFactory.class)};
    try (URLClassLoader app =
        new URLClassLoader(production, ClassLoader.getPlatformClassLoader())) {
      Class<?> manager = Class.forName(LeaseManager.class.getName(), true, app);
      Class<?> builderType = Class.forName(LeaseManager.Builder.class.getName(), true, app);
      Class<?> internals = Class.forName(LeaseInternals.class.getName(), true, app);
      Class<?> rulesType = Class.forName(LifecycleRules.class.getName(), true, app);
      // any implementation is refused, even the production rules: the gate is the JVM, not them
      Object rules = rulesType.getField("PRODUCTION").get(null);
      Object builder = manager.getMethod("builder", DataSource.class).invoke(null, NO_DATABASE);
      InvocationTargetException e =
          assertThrows(
              InvocationTargetException.class,
              () ->
                  internals
                      .getMethod("rulesForTesting", builderType, rulesType)
                      .invoke(null, builder, rules));
      IllegalStateException refused = assertInstanceOf(IllegalStateException.class, e.getCause());
      assertTrue(refused.getMessage().contains("LifecycleRules"), refused.getMessage());
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
