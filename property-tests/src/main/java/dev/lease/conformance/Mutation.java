package dev.lease.conformance;

import java.util.regex.Pattern;

/**
 * A deliberate break of lease-core's or lease-jdbc's real mechanism, for the negative controls. It
 * is applied where their SQL and calls reach the JDBC driver (the properties own that boundary: the
 * connections of their simulated processes), so the code that runs is the real lease-core and
 * lease-jdbc, and what the database receives is what a broken version of them would send. No hook
 * in lease-core or lease-jdbc is needed, and a change to their SQL that a mutation no longer
 * matches shows up as a control with no mutated statement (see {@link Mutations#hits()}), never
 * silently.
 */
public enum Mutation {
  /** Invariant 1 breaks: a claim hands the lease over without a new fencing token. */
  CLAIM_KEEPS_TERM(
      "lease-core's claim statement keeps the term instead of writing max(term + 1, clock in µs)"),
  /**
   * Invariant 1 breaks across a failover that lost claims: a hand-over writes term + 1 without the
   * database clock's floor, so a claim the promoted server never saw is granted again at its term.
   */
  TERM_PLUS_ONE(
      "lease-core's hand-overs write term + 1 instead of max(term + 1, database clock in µs)"),
  /** Invariant 2 breaks: a claim takes the lease from a live holder. */
  CLAIM_IGNORES_EXPIRY("lease-core's claim statement without its condition that the lease expired"),
  /** Invariant 3 breaks: a stale holder's verify passes while another holder has the lease. */
  VERIFY_IGNORES_HOLDER("lease-core's verify statement without its holder and term conditions"),
  /**
   * Invariant 4 breaks: a transaction abandoned by the application stays open on a pooled
   * connection (the pool does not roll back on return) and the next borrower commits its half.
   */
  ROLLBACK_LOST(
      "the rollback lease-jdbc sends when a fenced connection closes with its transaction open never"
          + " reaches the database"),
  /**
   * Not a break of the library but of the application: its transaction is not one, every statement
   * commits by itself (how the fault run's invariant 4 check is shown to catch a real run).
   */
  AUTOCOMMIT_STAYS_ON(
      "the application's setAutoCommit(false) never reaches the driver: each statement commits"
          + " alone"),
  /**
   * A transfer breaks: the transfer statement leaves the row free instead of pending for the
   * successor, which is a transfer done as a release followed by the successor's claim (issue 23's
   * unsafe hand-over): a third process can claim in between, and the successor gets a later term.
   */
  TRANSFER_FREES_ROW(
      "lease-core's transfer statement frees the row instead of keeping it pending for the"
          + " successor: a transfer done as release + the successor's claim"),
  /** A transfer breaks: any process adopts a transfer, not only the successor it names. */
  ADOPT_IGNORES_SUCCESSOR(
      "lease-core's adopt statement without its condition that the transfer names this instance");

  /** A claim statement of every dialect (the scheduler's slot claims included). */
  // the claim's SET, as a plain UPDATE (?) and as SQLite's create-or-claim upsert (excluded.)
  private static final Pattern CLAIM =
      Pattern.compile("holder = (\\?|excluded\\.holder), instance = (\\?|excluded\\.instance), ");

  /**
   * The new term of a hand-over: {@code GREATEST(term + 1, <clock in µs>)} ({@code t.term} on
   * PostgreSQL, SQLite's {@code MAX}, the clock possibly a bound {@code ?}).
   */
  private static final Pattern NEXT_TERM =
      Pattern.compile("(GREATEST|MAX)\\(((t\\.)?term) \\+ 1, ");

  private static final String VERIFY_CONDITION = "name = ? AND holder = ? AND term = ?";

  /**
   * SQLite's verify since the refusal moved into the server (issue 25): the row is found by name
   * and a CASE over holder and term raises the refusal, so the plain condition is not in its text.
   */
  private static final String VERIFY_CASE = "name = ? AND CASE WHEN holder = ? AND term = ?";

  /** PostgreSQL's verify names its operators in pg_catalog (issue 35). */
  private static final String VERIFY_QUALIFIED =
      "name OPERATOR(pg_catalog.=) ? AND holder OPERATOR(pg_catalog.=) ? AND term"
          + " OPERATOR(pg_catalog.=) ?";

  /** The transfer's expiry: database clock + the adoption bound (every dialect). */
  private static final Pattern TRANSFER_EXPIRY = Pattern.compile("expires_at_ms = (.+?) \\+ \\?,");

  /** The adopt statement's condition that the pending transfer names this instance. */
  private static final String ADOPT_CONDITION = "holder = ? AND instance = ?";

  private final String breaks;

  Mutation(String breaks) {
    this.breaks = breaks;
  }

  /** What is broken, in one phrase. */
  public String breaks() {
    return breaks;
  }

  /** {@code sql} as the broken version sends it; the same string when this mutation leaves it. */
  String rewrite(String sql) {
    switch (this) {
      case CLAIM_KEEPS_TERM:
        return CLAIM.matcher(sql).find() ? nextTerm(sql, " + 0") : sql;
      case TERM_PLUS_ONE:
        return CLAIM.matcher(sql).find() ? nextTerm(sql, " + 1") : sql;
      case CLAIM_IGNORES_EXPIRY:
        // "expires_at_ms <= <clock>" becomes "-1 <= <clock>": always true
        return CLAIM.matcher(sql).find() ? sql.replace("expires_at_ms <= ", "-1 <= ") : sql;
      case TRANSFER_FREES_ROW:
        // "expires_at_ms = <clock> + ?" becomes "expires_at_ms = 0 * ?": expired at once, the
        // parameter (the adoption bound) still bound
        return isTransfer(sql)
            ? TRANSFER_EXPIRY.matcher(sql).replaceFirst("expires_at_ms = 0 * ?,")
            : sql;
      case ADOPT_IGNORES_SUCCESSOR:
        return isAdopt(sql)
            ? sql.replace(ADOPT_CONDITION, "holder = ? AND (instance = ? OR 1 = 1)")
            : sql;
      case VERIFY_IGNORES_HOLDER:
        if (isVerify(sql)) {
          return sql.replace(
                  VERIFY_CONDITION, "name = ? AND (holder = ? OR 1 = 1) AND (term = ? OR 1 = 1)")
              .replace(
                  VERIFY_CASE,
                  "name = ? AND CASE WHEN (holder = ? OR 1 = 1) AND (term = ? OR 1 = 1)")
              .replace(
                  VERIFY_QUALIFIED,
                  "name OPERATOR(pg_catalog.=) ? AND (holder = ? OR 1 = 1) AND (term = ? OR 1 ="
                      + " 1)");
        }
        return sql;
      default:
        return sql;
    }
  }

  /**
   * Every {@code GREATEST(term + 1, <clock>)} of {@code sql} as {@code (term<plus> + 0 *
   * (<clock>))}: the clock's floor dropped, its parameter (if it is one) still bound.
   */
  static String nextTerm(String sql, String plus) {
    StringBuilder out = new StringBuilder();
    java.util.regex.Matcher m = NEXT_TERM.matcher(sql);
    int from = 0;
    while (m.find(from)) {
      int open = m.end(); // start of the clock expression
      int depth = 1;
      int i = open;
      for (; i < sql.length() && depth > 0; i++) {
        char c = sql.charAt(i);
        if (c == '(') {
          depth++;
        } else if (c == ')') {
          depth--;
        }
      }
      String clock = sql.substring(open, i - 1);
      out.append(sql, from, m.start())
          .append('(')
          .append(m.group(2))
          .append(plus)
          .append(" + 0 * (")
          .append(clock)
          .append("))");
      from = i;
    }
    return out.append(sql.substring(from)).toString();
  }

  /** True for the statements lease-core's verify sends (strict or plain, every dialect). */
  public static boolean isVerify(String sql) {
    return (sql.contains(VERIFY_CONDITION)
            || sql.contains(VERIFY_CASE)
            || sql.contains(VERIFY_QUALIFIED))
        && !sql.contains("SET expires_at_ms")
        && !CLAIM.matcher(sql).find(); // a transfer has the verify's condition too
  }

  /** True for lease-core's claim statements (and its transfer, which writes the row as they do). */
  public static boolean isClaim(String sql) {
    return CLAIM.matcher(sql).find();
  }

  /**
   * True for lease-core's transfer statement: it writes the row as a claim does, under the
   * condition that the transferring holder still holds it at its term.
   */
  public static boolean isTransfer(String sql) {
    return CLAIM.matcher(sql).find() && sql.contains(VERIFY_CONDITION);
  }

  /** True for lease-core's adopt statement (the successor takes a transfer). */
  public static boolean isAdopt(String sql) {
    // "instance = ?" alone: the adopt-ignores-successor control's text is still an adopt
    return sql.contains("SET holder = ?, expires_at_ms") && sql.contains("instance = ?");
  }
}
