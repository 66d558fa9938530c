package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.TestFault;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.net.URLClassLoader;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Issue 23: {@link LeaseInternals#faultForTesting} ships in the jar but breaks nothing in
 * production: without a test marker on the class path it is refused. Beside it, the control: with
 * the marker (test support is on this test's class path) it is honoured.
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
  void withoutATestMarkerAFaultIsRefused() throws Exception {
    URL[] production = {location(Lease.class), location(LoggerFactory.class)};
    try (URLClassLoader app =
        new URLClassLoader(production, ClassLoader.getPlatformClassLoader())) {
      Class<?> manager = Class.forName(LeaseManager.class.getName(), true, app);
      Class<?> builderType = Class.forName(LeaseManager.Builder.class.getName(), true, app);
      Class<?> internals = Class.forName(LeaseInternals.class.getName(), true, app);
      @SuppressWarnings({"unchecked", "rawtypes"})
      Object fault =
          Enum.valueOf(
              (Class) Class.forName(TestFault.class.getName(), true, app), "POLICY_NOT_ONCE");
      Object builder = manager.getMethod("builder", DataSource.class).invoke(null, NO_DATABASE);
      InvocationTargetException e =
          assertThrows(
              InvocationTargetException.class,
              () ->
                  internals
                      .getMethod("faultForTesting", builderType, fault.getClass())
                      .invoke(null, builder, fault));
      IllegalStateException refused = assertInstanceOf(IllegalStateException.class, e.getCause());
      assertTrue(refused.getMessage().contains("POLICY_NOT_ONCE"), refused.getMessage());
    }
  }

  @Test
  void withTheMarkerAFaultIsHonoured() {
    LeaseManager.Builder b = LeaseManager.builder(NO_DATABASE);
    assertSame(b, LeaseInternals.faultForTesting(b, TestFault.POLICY_NOT_ONCE));
  }

  private static URL location(Class<?> c) {
    return c.getProtectionDomain().getCodeSource().getLocation();
  }
}
