package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import java.net.InetAddress;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * What a lease name may be, checked before any statement runs: not empty, at most {@value
 * #MAX_LENGTH} characters (code points), no control characters, not ending in a space. Use it to
 * check names that come from configuration or data (a partition key, a tenant) before building
 * lease names from them.
 *
 * <pre>{@code
 * String name = "partition-" + key;
 * LeaseNames.problem(name).ifPresent(p -> log.warn("partition {} cannot be leased: {}", key, p));
 * }</pre>
 */
public final class LeaseNames {

  /** The longest lease name the lease table holds, in characters (code points). */
  public static final int MAX_LENGTH = Dialect.NAME_WIDTH;

  /**
   * A plain SQL identifier, optionally schema-qualified. Table names are written into SQL text
   * (they cannot be bound), so only this shape is accepted: no quoting, no spaces, nothing to
   * escape.
   */
  private static final Pattern TABLE =
      Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

  private static final Pattern FUNCTION = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

  private LeaseNames() {}

  /**
   * Checks a lease name.
   *
   * @return {@code name}
   * @throws IllegalArgumentException saying what is wrong with it and what to do
   */
  public static String validate(String name) {
    Optional<String> problem = problem(name);
    if (problem.isPresent()) {
      throw new IllegalArgumentException(problem.get());
    }
    return name;
  }

  /** True if {@code name} can be a lease name. */
  public static boolean isValid(String name) {
    return problem(name).isEmpty();
  }

  /** What is wrong with {@code name} as a lease name, and what to do; empty if it is fine. */
  public static Optional<String> problem(String name) {
    if (name == null || name.isEmpty()) {
      return Optional.of("lease name must not be empty");
    }
    int length = name.codePointCount(0, name.length());
    if (length > MAX_LENGTH) {
      return Optional.of(
          "lease name "
              + quote(abbreviate(name))
              + " is "
              + length
              + " characters long; the lease table holds at most "
              + MAX_LENGTH
              + ": use a shorter name");
    }
    if (name.chars().anyMatch(Character::isISOControl)) {
      return Optional.of(
          "lease name " + quote(abbreviate(name)) + " contains control characters; remove them");
    }
    // MySQL and MariaDB compare VARCHAR with PAD SPACE collations (utf8mb4_bin too; MariaDB manual,
    // "Character Sets and Collations", NO PAD collations): 'job' and 'job ' would be one lease
    // there and two elsewhere. Refused, so a name means the same lease on every database.
    int last = name.codePointBefore(name.length());
    if (Character.isWhitespace(last) || Character.isSpaceChar(last)) {
      return Optional.of(
          "lease name "
              + quote(abbreviate(name))
              + " ends with a space; MySQL and MariaDB ignore trailing spaces when comparing"
              + " names, so remove it");
    }
    return Optional.empty();
  }

  // ---- package-private: the other values that reach the lease table ----------------------------

  static String table(String table) {
    if (table == null || !TABLE.matcher(table).matches()) {
      throw new IllegalArgumentException(
          "lease table name "
              + quote(table)
              + " is not a plain SQL identifier: use letters, digits and '_' (at most 63, not starting"
              + " with a digit), optionally qualified by a schema as schema.table");
    }
    return table;
  }

  static String function(String function) {
    if (function == null || !FUNCTION.matcher(function).matches()) {
      throw new IllegalArgumentException(
          "clock function name "
              + quote(function)
              + " is not a plain SQL identifier (letters, digits and '_')");
    }
    return function;
  }

  /** The instance of a manager not given one: host/pid, cut to the width of the column. */
  static String defaultInstance() {
    String host = System.getenv("HOSTNAME");
    if (host == null || host.isBlank()) {
      try {
        host = InetAddress.getLocalHost().getHostName();
      } catch (Exception e) {
        host = "unknown-host";
      }
    }
    String id = host + "/" + ProcessHandle.current().pid();
    return id.length() <= Dialect.INSTANCE_WIDTH ? id : id.substring(0, Dialect.INSTANCE_WIDTH);
  }

  static String instance(String instance) {
    if (instance == null || instance.isBlank()) {
      throw new IllegalArgumentException("instance must not be empty");
    }
    if (instance.codePointCount(0, instance.length()) > Dialect.INSTANCE_WIDTH) {
      throw new IllegalArgumentException(
          "instance "
              + quote(abbreviate(instance))
              + " is longer than "
              + Dialect.INSTANCE_WIDTH
              + " characters; use a shorter one");
    }
    return instance;
  }

  private static String quote(String s) {
    return s == null ? "null" : "'" + s + "'";
  }

  private static String abbreviate(String s) {
    return s.length() <= 40 ? s : s.substring(0, 40) + "...";
  }
}
