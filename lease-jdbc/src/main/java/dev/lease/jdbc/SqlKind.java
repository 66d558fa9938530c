package dev.lease.jdbc;

/**
 * Classifies SQL text by its leading keyword, to see transaction control written as SQL: after
 * {@code BEGIN}, {@code COMMIT} or {@code ROLLBACK} the next statement may run in a new transaction
 * that has not been verified (checklist item 11 in shared/research/anchors-jdbc-agent.md). A cheap
 * scan: skips white space and comments, reads at most two words, never parses the statement.
 */
final class SqlKind {

  /** Anything else, including SAVEPOINT, RELEASE and ROLLBACK TO (they stay in the transaction). */
  static final int OTHER = 0;

  /** BEGIN, START TRANSACTION: a transaction starts (MySQL also commits the open one first). */
  static final int BEGIN = 1;

  /** COMMIT, END (PostgreSQL): the transaction ends. */
  static final int COMMIT = 2;

  /** ROLLBACK, ABORT (PostgreSQL), but not ROLLBACK TO [SAVEPOINT]: the transaction ends. */
  static final int ROLLBACK = 3;

  /**
   * CREATE, ALTER, DROP, TRUNCATE, RENAME, LOCK, UNLOCK, GRANT, REVOKE, ANALYZE, OPTIMIZE, REPAIR,
   * FLUSH and SET autocommit: MySQL and MariaDB commit the open transaction around them (MySQL
   * manual, "Statements That Cause an Implicit Commit"), so the next statement runs in a new one
   * that must be verified again. On PostgreSQL and SQLite most are transactional; re-verifying
   * there is harmless.
   */
  static final int DDL = 4;

  private SqlKind() {}

  static int of(String sql) {
    if (sql == null) {
      return OTHER;
    }
    int n = sql.length();
    int i = skip(sql, 0, n);
    if (i >= n) {
      return OTHER;
    }
    int end = wordEnd(sql, i, n);
    int len = end - i;
    switch (Character.toUpperCase(sql.charAt(i))) {
      case 'B':
        return word(sql, i, len, "BEGIN") ? BEGIN : OTHER;
      case 'S':
        if (word(sql, i, len, "START")) {
          return nextWord(sql, end, n, "TRANSACTION") ? BEGIN : OTHER;
        }
        if (word(sql, i, len, "SET")) {
          return nextWord(sql, end, n, "AUTOCOMMIT") ? DDL : OTHER;
        }
        return OTHER;
      case 'P':
        // PostgreSQL PREPARE TRANSACTION ends the transaction in the session (two-phase commit)
        return word(sql, i, len, "PREPARE") && nextWord(sql, end, n, "TRANSACTION")
            ? COMMIT
            : OTHER;
      case 'L':
        return word(sql, i, len, "LOCK") ? DDL : OTHER;
      case 'U':
        return word(sql, i, len, "UNLOCK") ? DDL : OTHER;
      case 'G':
        return word(sql, i, len, "GRANT") ? DDL : OTHER;
      case 'O':
        return word(sql, i, len, "OPTIMIZE") ? DDL : OTHER;
      case 'F':
        return word(sql, i, len, "FLUSH") ? DDL : OTHER;
      case 'C':
        if (word(sql, i, len, "COMMIT")) {
          return COMMIT;
        }
        return word(sql, i, len, "CREATE") ? DDL : OTHER;
      case 'E':
        return word(sql, i, len, "END") ? COMMIT : OTHER;
      case 'R':
        if (word(sql, i, len, "ROLLBACK")) {
          int j = skip(sql, end, n);
          int k = wordEnd(sql, j, n);
          if (word(sql, j, k - j, "WORK") || word(sql, j, k - j, "TRANSACTION")) {
            j = skip(sql, k, n);
            k = wordEnd(sql, j, n);
          }
          return word(sql, j, k - j, "TO") ? OTHER : ROLLBACK;
        }
        return word(sql, i, len, "RENAME")
                || word(sql, i, len, "REVOKE")
                || word(sql, i, len, "REPAIR")
            ? DDL
            : OTHER;
      case 'A':
        if (word(sql, i, len, "ABORT")) {
          return ROLLBACK;
        }
        return word(sql, i, len, "ALTER") || word(sql, i, len, "ANALYZE") ? DDL : OTHER;
      case 'D':
        return word(sql, i, len, "DROP") ? DDL : OTHER;
      case 'T':
        return word(sql, i, len, "TRUNCATE") ? DDL : OTHER;
      default:
        return OTHER;
    }
  }

  private static boolean nextWord(String sql, int from, int n, String keyword) {
    int j = skip(sql, from, n);
    return word(sql, j, wordEnd(sql, j, n) - j, keyword);
  }

  private static boolean word(String sql, int start, int len, String keyword) {
    return len == keyword.length() && sql.regionMatches(true, start, keyword, 0, len);
  }

  private static int wordEnd(String sql, int i, int n) {
    while (i < n && Character.isLetter(sql.charAt(i))) {
      i++;
    }
    return i;
  }

  /**
   * Skips white space, {@code -- line} and {@code /* block *}{@code /} comments, and semicolons.
   */
  private static int skip(String sql, int i, int n) {
    while (i < n) {
      char c = sql.charAt(i);
      if (Character.isWhitespace(c) || c == ';' || c == '(') {
        i++;
      } else if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
        while (i < n && sql.charAt(i) != '\n') {
          i++;
        }
      } else if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '*') {
        int close = sql.indexOf("*/", i + 2);
        i = close < 0 ? n : close + 2;
      } else {
        break;
      }
    }
    return i;
  }
}
