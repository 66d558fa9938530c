package dev.lease.agent;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * One entry of the {@code methods} key: {@code com.acme.Jobs#nightly=billing} runs every method
 * named {@code nightly} declared by {@code com.acme.Jobs} (all overloads) under the lease {@code
 * billing}.
 */
record MethodSpec(String className, String methodName, String leaseName) {

  private static final Pattern IDENTIFIER =
      Pattern.compile("[\\p{javaJavaIdentifierStart}]" + "[\\p{javaJavaIdentifierPart}]*");
  private static final Pattern BINARY_NAME =
      Pattern.compile(
          IDENTIFIER + "(\\." + IDENTIFIER + ")*(\\$" + "[\\p{javaJavaIdentifierPart}]+)*");
  private static final String SHAPE =
      "expected entries like com.acme.Jobs#nightly=billing"
          + " (fully qualified class, '#', method name, '=', lease name), separated by ';'";

  /** The key that the advice looks the method up by: {@code class#method}. */
  String key() {
    return className + "#" + methodName;
  }

  /**
   * Parses the value of the {@code methods} key.
   *
   * @throws BadConfigurationException naming the entry that is wrong and the expected shape
   */
  static List<MethodSpec> parseAll(String value) {
    List<MethodSpec> specs = new ArrayList<>();
    Map<String, MethodSpec> byKey = new LinkedHashMap<>();
    for (String raw : value.split(";")) {
      String entry = raw.trim();
      if (entry.isEmpty()) {
        continue;
      }
      MethodSpec spec = parse(entry);
      MethodSpec earlier = byKey.putIfAbsent(spec.key(), spec);
      if (earlier != null) {
        throw new BadConfigurationException(
            "bad method spec '"
                + entry
                + "': "
                + spec.key()
                + " is already configured (under lease '"
                + earlier.leaseName
                + "'); list each method once");
      }
      specs.add(spec);
    }
    if (specs.isEmpty()) {
      throw new BadConfigurationException(
          "bad method spec '" + value + "': no method given; " + SHAPE);
    }
    return List.copyOf(specs);
  }

  private static MethodSpec parse(String entry) {
    int hash = entry.indexOf('#');
    int eq = entry.indexOf('=');
    if (hash <= 0 || eq <= hash + 1 || eq == entry.length() - 1) {
      throw new BadConfigurationException("bad method spec '" + entry + "': " + SHAPE);
    }
    String className = entry.substring(0, hash).trim();
    String methodName = entry.substring(hash + 1, eq).trim();
    String leaseName = entry.substring(eq + 1).trim();
    if (!BINARY_NAME.matcher(className).matches()) {
      throw new BadConfigurationException(
          "bad method spec '"
              + entry
              + "': '"
              + className
              + "' is not a fully qualified class name; "
              + SHAPE);
    }
    if (!IDENTIFIER.matcher(methodName).matches()) {
      throw new BadConfigurationException(
          "bad method spec '"
              + entry
              + "': '"
              + methodName
              + "' is not a method name (constructors and static initialisers cannot be fenced); "
              + SHAPE);
    }
    AgentConfig.checkLeaseName("bad method spec '" + entry + "'", leaseName);
    return new MethodSpec(className, methodName, leaseName);
  }
}
