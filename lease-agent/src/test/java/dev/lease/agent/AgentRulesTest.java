package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The seam of the negative controls: production runs the agent's own rules; weakened ones (this
 * module's test class {@link WeakenedRules}, never in the jar) load only in a test JVM, with the
 * test-JVM property and lease's test support on the class path, and are refused anywhere else.
 */
class AgentRulesTest {

  private final String was = System.getProperty(TestingSwitches.TEST_JVM);

  @AfterEach
  void restore() {
    if (was == null) {
      System.clearProperty(TestingSwitches.TEST_JVM);
    } else {
      System.setProperty(TestingSwitches.TEST_JVM, was);
    }
  }

  private static ClassLoader loader() {
    return AgentRulesTest.class.getClassLoader();
  }

  @Test
  void withoutThePropertyTheAgentsOwnRulesRun() {
    System.setProperty(TestingSwitches.TEST_JVM, "true");
    assertSame(AgentRules.PRODUCTION, TestingSwitches.rules(null, loader()));
    assertSame(AgentRules.PRODUCTION, TestingSwitches.rules(" ", loader()));
  }

  @Test
  void inATestJvmWithTestSupportTheWeakenedRulesLoad() {
    System.setProperty(TestingSwitches.TEST_JVM, "true");
    assertInstanceOf(
        WeakenedRules.class, TestingSwitches.rules(WeakenedRules.class.getName(), loader()));
  }

  @Test
  void withoutTheTestJvmPropertyTheyAreRefused() {
    System.clearProperty(TestingSwitches.TEST_JVM);
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> TestingSwitches.rules(WeakenedRules.class.getName(), loader()));
    assertTrue(e.getMessage().contains("refused here"), e.getMessage());
  }

  /** As an application has the agent: no test support, so no marker class, on its class path. */
  @Test
  void withoutATestMarkerOnTheClassPathTheyAreRefused() throws Exception {
    System.setProperty(TestingSwitches.TEST_JVM, "true");
    try (URLClassLoader app =
        new URLClassLoader(new URL[0], ClassLoader.getPlatformClassLoader())) {
      IllegalStateException e =
          assertThrows(
              IllegalStateException.class,
              () -> TestingSwitches.rules(WeakenedRules.class.getName(), app));
      assertTrue(e.getMessage().contains(TestingSwitches.RULES), e.getMessage());
    }
  }

  @Test
  void anUnknownMechanismIsRefusedRatherThanIgnored() {
    System.setProperty(TestingSwitches.TEST_JVM, "true");
    String disable = "lease.agent.testing.disable";
    System.setProperty(disable, "xa-poisson");
    try {
      IllegalStateException e =
          assertThrows(
              IllegalStateException.class,
              () -> TestingSwitches.rules(WeakenedRules.class.getName(), loader()));
      assertTrue(e.getMessage().contains("unknown mechanism xa-poisson"), e.getMessage());
    } finally {
      System.clearProperty(disable);
    }
  }
}
