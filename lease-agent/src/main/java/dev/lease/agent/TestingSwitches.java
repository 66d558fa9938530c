package dev.lease.agent;

import java.util.Map;
import java.util.TreeMap;

/**
 * The switches that break one mechanism on purpose for the negative controls of this project's
 * tests ({@code -Dlease.agent.testing.*}, and lease-jdbc's {@code -Dlease.jdbc.testing.*}, which
 * the agent jar carries). They ship in the jar, so a leftover one must never weaken a production
 * JVM silently: they are honoured only in a JVM that also says it is one of this project's test
 * JVMs ({@code -Dlease.agent.testJvm=true}, set by the child-JVM tests), which logs an ERROR at
 * start naming them; anywhere else the agent refuses to start ({@link LeaseAgent#premain}).
 */
final class TestingSwitches {

  /** The marker of this project's test JVMs. */
  static final String TEST_JVM = "lease.agent.testJvm";

  private static final String[] PREFIXES = {"lease.agent.testing.", "lease.jdbc.testing."};

  private TestingSwitches() {}

  static boolean isTestJvm() {
    return Boolean.parseBoolean(System.getProperty(TEST_JVM));
  }

  /** Every switch that is set, by property name. */
  static Map<String, String> set() {
    Map<String, String> set = new TreeMap<>();
    for (String name : System.getProperties().stringPropertyNames()) {
      for (String prefix : PREFIXES) {
        if (name.startsWith(prefix)) {
          set.put(name, System.getProperty(name));
        }
      }
    }
    return set;
  }

  /** The agent's switch {@code lease.agent.testing.NAME}; "" when unset or outside a test JVM. */
  static String get(String name) {
    return isTestJvm() ? System.getProperty("lease.agent.testing." + name, "") : "";
  }

  /** "a=1, b=2". */
  static String describe(Map<String, String> switches) {
    StringBuilder sb = new StringBuilder();
    switches.forEach(
        (k, v) -> sb.append(sb.length() == 0 ? "" : ", ").append(k).append('=').append(v));
    return sb.toString();
  }
}
