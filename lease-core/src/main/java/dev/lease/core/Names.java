package dev.lease.core;

import java.util.regex.Pattern;

/** Validation of every user value that reaches the lease table, before any statement runs. */
final class Names {

  /** Column widths of the lease table; the DDL of every dialect uses these. */
  static final int NAME_WIDTH = 128;

  static final int INSTANCE_WIDTH = 128;
  static final int HOLDER_WIDTH = 64;

  /**
   * A plain SQL identifier, optionally schema-qualified. Table names are written into SQL text
   * (they cannot be bound), so only this shape is accepted: no quoting, no spaces, nothing to
   * escape.
   */
  private static final Pattern TABLE =
      Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

  private static final Pattern FUNCTION = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

  private Names() {}

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

  static String leaseName(String name) {
    if (name == null || name.isEmpty()) {
      throw new IllegalArgumentException("lease name must not be empty");
    }
    if (name.codePointCount(0, name.length()) > NAME_WIDTH) {
      throw new IllegalArgumentException(
          "lease name "
              + quote(abbreviate(name))
              + " is "
              + name.codePointCount(0, name.length())
              + " characters long; the lease table holds at most "
              + NAME_WIDTH
              + ": use a shorter name");
    }
    if (name.chars().anyMatch(Character::isISOControl)) {
      throw new IllegalArgumentException(
          "lease name " + quote(abbreviate(name)) + " contains control characters; remove them");
    }
    // MySQL and MariaDB compare VARCHAR with PAD SPACE collations (utf8mb4_bin too; MariaDB manual,
    // "Character Sets and Collations", NO PAD collations): 'job' and 'job ' would be one lease
    // there
    // and two elsewhere. Refused, so a name means the same lease on every database.
    int last = name.codePointBefore(name.length());
    if (Character.isWhitespace(last) || Character.isSpaceChar(last)) {
      throw new IllegalArgumentException(
          "lease name "
              + quote(abbreviate(name))
              + " ends with a"
              + " space; MySQL and MariaDB ignore trailing spaces when comparing names, so remove it");
    }
    return name;
  }

  static String instance(String instance) {
    if (instance == null || instance.isBlank()) {
      throw new IllegalArgumentException("instance must not be empty");
    }
    if (instance.codePointCount(0, instance.length()) > INSTANCE_WIDTH) {
      throw new IllegalArgumentException(
          "instance "
              + quote(abbreviate(instance))
              + " is longer than "
              + INSTANCE_WIDTH
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
