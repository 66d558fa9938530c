package dev.lease.core.group;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.internal.GroupInternals;
import dev.lease.core.internal.GroupRules;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Issue 21: {@link GroupInternals#rulesForTesting} ships in the jar but weakens no production
 * group: without a test marker on the class path it is refused, before it looks at the builder. The
 * control, the hook honoured in this test JVM, is every group test's negative control built with
 * {@link WeakenedGroup#applyTo} (each one is caught).
 */
class GroupRulesGateTest {

  @Test
  void withoutATestMarkerWeakenedGroupRulesAreRefused() throws Exception {
    URL[] production = {location(Lease.class), location(LoggerFactory.class)};
    try (URLClassLoader app =
        new URLClassLoader(production, ClassLoader.getPlatformClassLoader())) {
      Class<?> builderType = Class.forName(LeaseGroup.Builder.class.getName(), true, app);
      Class<?> internals = Class.forName(GroupInternals.class.getName(), true, app);
      Class<?> rulesType = Class.forName(GroupRules.class.getName(), true, app);
      // any implementation is refused, even the production rules: the gate is the JVM, not them
      Object rules = rulesType.getField("PRODUCTION").get(null);
      InvocationTargetException e =
          assertThrows(
              InvocationTargetException.class,
              () ->
                  internals
                      .getMethod("rulesForTesting", builderType, rulesType)
                      .invoke(null, null, rules));
      IllegalStateException refused = assertInstanceOf(IllegalStateException.class, e.getCause());
      assertTrue(refused.getMessage().contains("GroupRules"), refused.getMessage());
      assertTrue(refused.getMessage().contains("refused"), refused.getMessage());
    }
  }

  private static URL location(Class<?> c) {
    return c.getProtectionDomain().getCodeSource().getLocation();
  }
}
