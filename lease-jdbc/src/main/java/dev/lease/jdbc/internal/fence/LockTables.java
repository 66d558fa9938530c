package dev.lease.jdbc.internal.fence;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * MySQL/MariaDB {@code LOCK TABLES} under a lease (issue 25 item 6). While a session holds table
 * locks it may read only the tables it locked, under the names it locked them by; every statement
 * under a lease verifies by reading the lease table, so a {@code LOCK TABLES} list must name the
 * lease table (unaliased, {@code READ} is enough) for the statements after it to run. The fence
 * checks the list before the statement is sent and refuses one without the lease table with an
 * error that says what to add, instead of letting every later statement fail with the server's
 * "Table 'leases' was not locked with LOCK TABLES".
 */
final class LockTables {

  private static final Pattern LOCK =
      Pattern.compile("(?is)\\s*LOCK\\s+TABLES?\\s+(.*?)\\s*;?\\s*");

  private static final Set<String> LOCK_TYPES = Set.of("READ", "WRITE", "LOW_PRIORITY");

  private LockTables() {}

  /**
   * The tables {@code statement} (one statement's text) locks by their own name (not through an
   * alias), normalised ({@link #normalise}); null if it is not a {@code LOCK TABLE(S)} statement.
   */
  static List<String> lockedByName(String statement) {
    Matcher m = LOCK.matcher(withoutComments(statement));
    if (!m.matches()) {
      return null;
    }
    List<String> names = new ArrayList<>();
    for (String entry : splitOutsideQuotes(m.group(1), ',')) {
      List<String> words = splitOutsideQuotes(entry.trim(), ' ');
      words.removeIf(String::isBlank);
      if (words.size() >= 2 && LOCK_TYPES.contains(words.get(1).toUpperCase(Locale.ROOT))) {
        names.add(normalise(words.get(0)));
      }
    }
    return names;
  }

  /** True if {@code statement} is a LOCK TABLES that does not lock {@code leaseTable} by name. */
  static boolean leavesOut(String statement, String leaseTable) {
    List<String> names = lockedByName(statement);
    return names != null && !names.contains(normalise(leaseTable));
  }

  /**
   * A table name as MySQL compares it here: quotes removed, the schema left out, lower case (the
   * lease table is one table of the connection's schema in every supported set-up).
   */
  static String normalise(String name) {
    String n = name.replace("`", "").replace("\"", "");
    int dot = n.lastIndexOf('.');
    return (dot < 0 ? n : n.substring(dot + 1)).toLowerCase(Locale.ROOT);
  }

  /** Plain comments dropped; a versioned comment ({@code /*!40000 ...}) keeps its content. */
  private static String withoutComments(String s) {
    String kept = s.replaceAll("(?s)/\\*!\\d*(.*?)\\*/", " $1 ");
    kept = kept.replaceAll("(?s)/\\*.*?\\*/", " ");
    return kept.replaceAll("(?m)(--\\s|#).*$", " ");
  }

  private static List<String> splitOutsideQuotes(String s, char separator) {
    List<String> out = new ArrayList<>();
    StringBuilder cur = new StringBuilder();
    char quote = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        }
        cur.append(c);
      } else if (c == '`' || c == '"' || c == '\'') {
        quote = c;
        cur.append(c);
      } else if (c == separator || (separator == ' ' && Character.isWhitespace(c))) {
        out.add(cur.toString());
        cur.setLength(0);
      } else {
        cur.append(c);
      }
    }
    out.add(cur.toString());
    return out;
  }
}
