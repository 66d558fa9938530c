package dev.lease.agent;

import dev.lease.core.internal.LeaseInternals;
import java.util.Map;
import java.util.TreeMap;

/**
 * The guard of the switches that break one mechanism on purpose for the negative controls of this
 * project's tests: {@value #RULES} (the class of weakened {@link AgentRules}, which the agent's
 * test sources hold, never the jar; it also weakens the lease-jdbc fence the agent builds, through
 * {@link AgentRules#fencing}) and the {@code lease.agent.testing.*} switches that class reads. A
 * leftover one must never weaken a production JVM silently: they are honoured only in a JVM that
 * says it is one of this project's test JVMs ({@code -Dlease.agent.testJvm=true}, set by the
 * child-JVM tests) and has lease's test support or conformance runner on its class path ({@code
 * LeaseInternals.testJvm}, as lease-jdbc's weakenings); such a JVM logs an ERROR at start naming
 * them, anywhere else the agent refuses to start ({@link LeaseAgent#premain}).
 */
final class TestingSwitches {

  /** The marker of this project's test JVMs. */
  static final String TEST_JVM = "lease.agent.testJvm";

  /** The class of the weakened rules to load in place of {@link AgentRules#PRODUCTION}. */
  static final String RULES = "lease.agent.testing.rules";

  private static final String[] PREFIXES = {"lease.agent.testing."};

  private TestingSwitches() {}

  static boolean isTestJvm() {
    return isTestJvm(TestingSwitches.class.getClassLoader());
  }

  static boolean isTestJvm(ClassLoader loader) {
    return Boolean.parseBoolean(System.getProperty(TEST_JVM)) && LeaseInternals.testJvm(loader);
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

  /** The rules of this JVM: {@link AgentRules#PRODUCTION} unless a test JVM names others. */
  static AgentRules rules() {
    return rules(System.getProperty(RULES), TestingSwitches.class.getClassLoader());
  }

  /**
   * @throws IllegalStateException if {@code className} is set outside a test JVM, or cannot be
   *     loaded as rules
   */
  static AgentRules rules(String className, ClassLoader loader) {
    if (className == null || className.isBlank()) {
      return AgentRules.PRODUCTION;
    }
    if (!isTestJvm(loader)) {
      throw new IllegalStateException(
          RULES
              + "="
              + className
              + " deliberately weakens the agent (negative controls of lease's own tests); it is"
              + " honoured only in this project's test JVMs (-D"
              + TEST_JVM
              + "=true with lease's test support on the class path), and refused here: remove it");
    }
    try {
      return (AgentRules)
          Class.forName(className.trim(), true, loader).getDeclaredConstructor().newInstance();
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw new IllegalStateException(RULES + "=" + className + ": " + e.getCause(), e.getCause());
    } catch (ReflectiveOperationException | ClassCastException | LinkageError e) {
      throw new IllegalStateException(
          RULES + "=" + className + " cannot be loaded as the agent's rules: " + e, e);
    }
  }

  /** "a=1, b=2". */
  static String describe(Map<String, String> switches) {
    StringBuilder sb = new StringBuilder();
    switches.forEach(
        (k, v) -> sb.append(sb.length() == 0 ? "" : ", ").append(k).append('=').append(v));
    return sb.toString();
  }
}
