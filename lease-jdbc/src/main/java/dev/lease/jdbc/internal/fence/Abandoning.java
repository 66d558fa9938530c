package dev.lease.jdbc.internal.fence;

import dev.lease.jdbc.internal.sql.SqlDialect;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlStatement;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;

/**
 * A refused transaction must always be abandonable (issue 25 item 8): the statements that only end
 * or abandon a transaction, or undo a session setting that blocks the fence, pass a poisoned fence,
 * and an XA transaction begun as SQL (MySQL/MariaDB {@code XA START}) is remembered so that {@code
 * rollback()}, close and a pool's return can end it: MariaDB refuses a plain ROLLBACK while an XA
 * branch is ACTIVE or IDLE ({@code XAE07 XAER_RMFAIL}), and HikariCP's close left the physical
 * connection in XA ACTIVE.
 *
 * <p>What passes a poisoned fence ({@link #of}):
 *
 * <ul>
 *   <li>{@code XA END} (MySQL/MariaDB): ends the branch's statements without committing anything;
 *       {@code XA PREPARE} and {@code XA COMMIT} stay refused;
 *   <li>{@code UNLOCK TABLES} (MySQL/MariaDB): run after the poisoned transaction is rolled back,
 *       since it commits the open transaction implicitly when LOCK TABLES was used (MySQL manual,
 *       "LOCK TABLES and UNLOCK TABLES Statements"); a pooled connection never goes back with its
 *       tables locked;
 *   <li>{@code SET [SESSION] TRANSACTION READ WRITE} (MySQL/MariaDB) and PostgreSQL's {@code SET
 *       SESSION CHARACTERISTICS AS TRANSACTION READ WRITE} / {@code SET
 *       default_transaction_read_only = off}: they change no data.
 * </ul>
 *
 * The ROLLBACK family passes by {@link TransactionFence}'s own rule.
 */
final class Abandoning {

  static final int NONE = 0;
  static final int XA_END = 1;
  static final int UNLOCK_TABLES = 2;
  static final int READ_WRITE = 3;

  /** The xid of an XA transaction begun as SQL and not yet rolled back or committed; else null. */
  private String xid;

  /** {@link #xid} as written, to be sent back. */
  private String xidSql;

  /** {@code XA END} ran for {@link #xid}. */
  private boolean xaEnded;

  /** What the only statement of {@code text} does, one of the constants above. */
  static int of(SqlLexer lexer, String text) {
    List<String> w = words(lexer, text, 6);
    if (w.isEmpty()) {
      return NONE;
    }
    if (lexer.dialect == SqlDialect.MYSQL) {
      if (w.size() >= 2 && w.get(0).equals("XA") && w.get(1).equals("END")) {
        return XA_END;
      }
      if (w.size() == 2 && w.get(0).equals("UNLOCK") && w.get(1).matches("TABLES?")) {
        return UNLOCK_TABLES;
      }
      if (w.get(0).equals("SET")
          && w.size() >= 4
          && w.subList(1, w.size()).containsAll(List.of("TRANSACTION", "READ", "WRITE"))
          && !w.contains("GLOBAL")) {
        return READ_WRITE;
      }
    }
    if (lexer.dialect == SqlDialect.POSTGRESQL && w.get(0).equals("SET")) {
      String all = String.join(" ", w);
      if (all.startsWith("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")
          || all.matches("SET (SESSION )?DEFAULT_TRANSACTION_READ_ONLY (TO|=) (OFF|FALSE|0)")) {
        return READ_WRITE;
      }
    }
    return NONE;
  }

  /**
   * The first {@code max} words of the only statement of {@code text}, upper case ('...' literals
   * kept as they are, comments dropped); empty if the text holds not exactly one statement.
   */
  static List<String> words(SqlLexer lexer, String text, int max) {
    if (text == null) {
      return List.of();
    }
    List<SqlStatement> statements = lexer.statements(text);
    if (statements.size() != 1) {
      return List.of();
    }
    String s = statements.get(0).text(text);
    List<String> out = new java.util.ArrayList<>();
    int i = 0;
    int n = s.length();
    while (i < n && out.size() < max) {
      char c = s.charAt(i);
      if (Character.isWhitespace(c) || c == ',') {
        i++;
      } else if (c == '=') {
        out.add("=");
        i++;
      } else if (c == '\'' || c == '"' || c == '`') {
        int j = s.indexOf(c, i + 1);
        j = j < 0 ? n : j + 1;
        out.add(s.substring(i, j));
        i = j;
      } else if (c == '/' && i + 1 < n && s.charAt(i + 1) == '*') {
        int j = s.indexOf("*/", i + 2);
        i = j < 0 ? n : j + 2;
      } else {
        int j = i;
        while (j < n
            && !Character.isWhitespace(s.charAt(j))
            && s.charAt(j) != ','
            && s.charAt(j) != '='
            && s.charAt(j) != '\'') {
          j++;
        }
        out.add(s.substring(i, j).toUpperCase(Locale.ROOT));
        i = j;
      }
    }
    return out;
  }

  // ---- the XA transaction begun as SQL (MySQL/MariaDB)

  /**
   * Before a transaction-control text runs on MySQL/MariaDB: remembers {@code XA START xid} and
   * forgets it at its {@code XA ROLLBACK}/{@code XA COMMIT}.
   *
   * @return true when {@code text} ended the remembered branch (XA ROLLBACK or XA COMMIT of its
   *     xid): the session's transaction is over
   */
  boolean observe(SqlLexer lexer, String text) {
    if (text == null) {
      return false;
    }
    List<SqlStatement> statements = lexer.statements(text);
    if (statements.size() != 1) {
      return false;
    }
    java.util.regex.Matcher m = XA.matcher(statements.get(0).text(text));
    if (!m.matches()) {
      return false;
    }
    String verb = m.group(1).toUpperCase(Locale.ROOT);
    String x = m.group(2).replaceAll("\\s+", "");
    switch (verb) {
      case "START":
      case "BEGIN":
        xid = x;
        xidSql = m.group(2).trim();
        xaEnded = false;
        return false;
      case "END":
        xaEnded = xaEnded || x.equals(xid);
        return false;
      case "ROLLBACK":
      case "COMMIT":
        if (x.equals(xid)) {
          xid = null;
          return true;
        }
        return false;
      default:
        return false;
    }
  }

  /** XA verb xid [JOIN|RESUME|SUSPEND [FOR MIGRATE]|ONE PHASE]; the xid's parts kept as written. */
  private static final java.util.regex.Pattern XA =
      java.util.regex.Pattern.compile(
          "XA\\s+(\\w+)\\s+(.*?)(?:\\s+(?:JOIN|RESUME|SUSPEND(?:\\s+FOR\\s+MIGRATE)?"
              + "|ONE\\s+PHASE))?\\s*",
          java.util.regex.Pattern.CASE_INSENSITIVE | java.util.regex.Pattern.DOTALL);

  /**
   * True when {@code text} is {@code XA COMMIT xid ONE PHASE} of the remembered branch after its
   * {@code XA END} (which passed the checks of a commit): the branch is IDLE and holds its locks,
   * STRICT's share lock included, until this commit.
   */
  boolean onePhaseOfEndedBranch(SqlLexer lexer, String text) {
    if (text == null || xid == null || !xaEnded) {
      return false;
    }
    List<SqlStatement> statements = lexer.statements(text);
    if (statements.size() != 1) {
      return false;
    }
    String one = statements.get(0).text(text).trim();
    java.util.regex.Matcher m = XA.matcher(one);
    return m.matches()
        && m.group(1).equalsIgnoreCase("COMMIT")
        && m.group(2).replaceAll("\\s+", "").equals(xid)
        && one.toUpperCase(Locale.ROOT).matches("(?s).*\\sONE\\s+PHASE$");
  }

  boolean xaOpen() {
    return xid != null;
  }

  /**
   * Ends the remembered XA branch without committing it: {@code XA END} (unless it ran) and {@code
   * XA ROLLBACK}, through the driver's own statement.
   */
  void abandonXa(Connection delegate) throws SQLException {
    String x = xidSql;
    if (xid == null) {
      return;
    }
    try (Statement s = delegate.createStatement()) {
      if (!xaEnded) {
        try {
          s.execute("XA END " + x);
        } catch (SQLException e) {
          // already IDLE or PREPARED: the rollback below says whether it could end it
        }
      }
      s.execute("XA ROLLBACK " + x);
    }
    xid = null;
    xaEnded = false;
  }
}
