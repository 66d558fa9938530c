package dev.lease.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Review S6: the negative-control switch {@code -Dlease.jdbc.testing.weaken} must not weaken a
 * production fence. lease-jdbc is loaded here as an application would have it (lease-jdbc,
 * lease-core and slf4j on the class path, no test support): with the switch set, building options
 * fails with a clear error. With test support on the class path (this test's own) it is honoured,
 * as the property tests and the conformance runner's {@code --controls} need.
 */
class WeakeningSwitchTest {

  @Test
  void withoutATestMarkerTheSwitchIsRefused() throws Exception {
    URL[] production = {
      location(FencingOptions.class), location(Lease.class), location(LoggerFactory.class)
    };
    try (URLClassLoader app =
        new URLClassLoader(production, ClassLoader.getPlatformClassLoader())) {
      Class<?> options = Class.forName(FencingOptions.class.getName(), true, app);
      Object builder = options.getMethod("builder").invoke(null);
      String was = System.getProperty(Weakening.PROPERTY);
      System.setProperty(Weakening.PROPERTY, "NO_REVERIFY");
      try {
        InvocationTargetException e =
            assertThrows(
                InvocationTargetException.class,
                () -> builder.getClass().getMethod("build").invoke(builder));
        IllegalStateException refused = assertInstanceOf(IllegalStateException.class, e.getCause());
        assertTrue(refused.getMessage().contains(Weakening.PROPERTY), refused.getMessage());
      } finally {
        restore(was);
      }
    }
  }

  /** Beside it: with the marker (test support is on this test's class path) it is honoured. */
  @Test
  void withTestSupportOnTheClassPathTheSwitchIsHonoured() {
    String was = System.getProperty(Weakening.PROPERTY);
    System.setProperty(Weakening.PROPERTY, "NO_REVERIFY");
    try {
      assertEquals(Set.of(Weakening.NO_REVERIFY), FencingOptions.builder().build().weakenings());
    } finally {
      restore(was);
    }
  }

  /**
   * A weakening that has a strategy seam plugs the weaker strategy in, whether it comes from the
   * switch (the property tests' route) or from the builder; without one the production strategies
   * stay.
   */
  @Test
  void theSwitchPlugsInTheWeakerStrategies() {
    FencingOptions plain = FencingOptions.builder().build();
    assertEquals(Reading.EVERY_STATEMENT, plain.reading());
    assertEquals(DriverSessions.ASKED, plain.sessions());
    assertEquals(LockDoubt.VERIFY_AGAIN, plain.lockDoubt());
    String was = System.getProperty(Weakening.PROPERTY);
    System.setProperty(Weakening.PROPERTY, "LEADING_KEYWORD,NO_DRIVER_SESSION,NO_REVERIFY");
    try {
      FencingOptions weak = FencingOptions.builder().build();
      assertEquals(Reading.LEADING_KEYWORD, weak.reading());
      assertEquals(DriverSessions.IGNORED, weak.sessions());
      assertEquals(LockDoubt.TRUST_THE_LOCK, weak.lockDoubt());
    } finally {
      restore(was);
    }
    assertEquals(
        Reading.UNKNOWN_IMPLICIT_COMMITS,
        FencingOptions.builder().weaken(Weakening.UNKNOWN_IMPLICIT_COMMITS).build().toBuilder()
            .build()
            .reading());
  }

  private static void restore(String was) {
    if (was == null) {
      System.clearProperty(Weakening.PROPERTY);
    } else {
      System.setProperty(Weakening.PROPERTY, was);
    }
  }

  private static URL location(Class<?> c) {
    return c.getProtectionDomain().getCodeSource().getLocation();
  }
}
