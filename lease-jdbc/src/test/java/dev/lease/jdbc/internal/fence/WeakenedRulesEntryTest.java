package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.OptionsAccess;
import dev.lease.jdbc.internal.FenceInternals;
import dev.lease.jdbc.internal.FenceRules;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Review S6, issue 21: the negative controls' weakened {@link FenceRules} must not weaken a
 * production fence. Their one entry, {@link FenceInternals#rulesForTesting}, is loaded here as an
 * application would have it (lease-jdbc, lease-core and slf4j on the class path, no test support):
 * it refuses with a clear error. With test support on the class path (this test's own) it is
 * honoured, as lease-jdbc's tests, the property tests and the conformance runner's {@code
 * --controls} need. No system property weakens a fence any more.
 */
class WeakenedRulesEntryTest {

  @Test
  void withoutATestMarkerTheEntryIsRefused() throws Exception {
    URL[] production = {
      location(FencingOptions.class), location(Lease.class), location(LoggerFactory.class)
    };
    try (URLClassLoader app =
        new URLClassLoader(production, ClassLoader.getPlatformClassLoader())) {
      Class<?> options = Class.forName(FencingOptions.class.getName(), true, app);
      Object builder = options.getMethod("builder").invoke(null);
      Class<?> rules = Class.forName(FenceRules.class.getName(), true, app);
      Object production0 = rules.getField("PRODUCTION").get(null);
      Class<?> entry = Class.forName(FenceInternals.class.getName(), true, app);
      InvocationTargetException e =
          assertThrows(
              InvocationTargetException.class,
              () ->
                  entry
                      .getMethod("rulesForTesting", builder.getClass(), rules)
                      .invoke(null, builder, production0));
      IllegalStateException refused = assertInstanceOf(IllegalStateException.class, e.getCause());
      assertTrue(refused.getMessage().contains("honoured only"), refused.getMessage());
    }
  }

  /** Beside it: with the marker (test support is on this test's class path) it is honoured. */
  @Test
  void withTestSupportOnTheClassPathTheEntryIsHonoured() {
    FencingOptions weak =
        WeakenedFence.weaken(FencingOptions.builder(), WeakenedFence.NO_REVERIFY).build();
    assertFalse(OptionsAccess.rules(weak).reverifiesAfterDoubt());
    assertTrue(OptionsAccess.rules(weak).asksDriverSession());
    assertTrue(weak.toString().contains("WEAKENED=[NO_REVERIFY]"), weak.toString());
    // weakenings add up, and toBuilder keeps them
    FencingOptions both =
        WeakenedFence.weaken(weak.toBuilder(), WeakenedFence.NO_DRIVER_SESSION).build();
    assertFalse(OptionsAccess.rules(both.toBuilder().build()).reverifiesAfterDoubt());
    assertFalse(OptionsAccess.rules(both).asksDriverSession());
  }

  /** The production rules, and no system property can change them (the old switch is gone). */
  @Test
  void optionsRunTheProductionRules() {
    assertSame(FenceRules.PRODUCTION, OptionsAccess.rules(FencingOptions.defaults()));
    assertSame(FenceRules.PRODUCTION, OptionsAccess.rules(FencingOptions.builder().build()));
    assertFalse(FencingOptions.defaults().toString().contains("WEAKENED"));
  }

  /**
   * The fence's own input does not open a second way in: a {@link FenceConfig} with weakened rules
   * is built from {@code FencingOptions} (whose rules came through the gate) by {@code
   * FencedConnections} only, not by a direct call, which gets a clear error; production rules may
   * be given by anyone.
   */
  @Test
  void aFenceConfigWithWeakenedRulesIsBuiltByFencedConnectionsOnly() {
    FenceRules weak = WeakenedFence.NO_REVERIFY.rules();
    IllegalStateException refused =
        assertThrows(
            IllegalStateException.class,
            () -> new FenceConfig(FencingOptions.defaults(), weak, false, null));
    assertTrue(
        refused.getMessage().contains("built by FencedConnections only"), refused.getMessage());
    assertSame(
        FenceRules.PRODUCTION,
        new FenceConfig(FencingOptions.defaults(), FenceRules.PRODUCTION, false, null).rules());
    // beside it: the same rules through the gate and FencingOptions build a fence
    FencingOptions gated =
        WeakenedFence.weaken(FencingOptions.builder(), WeakenedFence.NO_REVERIFY).build();
    FenceConfig config = OptionsAccess.fence(gated);
    assertFalse(config.rules().reverifiesAfterDoubt());
    assertTrue(config.weakened());
  }

  private static URL location(Class<?> c) {
    return c.getProtectionDomain().getCodeSource().getLocation();
  }
}
