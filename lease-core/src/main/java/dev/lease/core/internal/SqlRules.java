package dev.lease.core.internal;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * The pieces of the dialects' SQL and session handling that the negative controls of the tests
 * break one at a time: the term a new row starts at, a failed restore after a failed attempt, how a
 * MySQL/MariaDB lease session keeps the settings it changes, the row lock of PostgreSQL's transfer,
 * the index MySQL/MariaDB statements over a list of names use. The default methods are the rules;
 * production runs {@link #PRODUCTION}, whose texts are the statements' own.
 *
 * <p>A weakened implementation (the control of one mechanism) lives in test sources (or the
 * conformance runner) only, never in the jar, and reaches a manager through {@link
 * LeaseInternals#sqlRulesForTesting}, honoured only in a test JVM. Production code asks a rule here
 * and branches on no test switch. The dialects' counterpart of {@link LifecycleRules}.
 *
 * <p>Not API: it may change in any release.
 */
public interface SqlRules {

  /** The rules every production manager runs. */
  SqlRules PRODUCTION = new SqlRules() {};

  /**
   * The SQL expression of the term a new lease row starts at: the database clock in microseconds,
   * so terms never repeat for a name even when its row is deleted (see the dialects' {@code
   * startTerm}).
   *
   * @param clockMicros the SQL expression of the database clock, epoch microseconds (SQLite:
   *     milliseconds × 1000)
   */
  default String startTerm(String clockMicros) {
    return clockMicros;
  }

  /**
   * The SQL expression of the term a hand-over writes (a claim, a transfer, a slot's claim): the
   * larger of the row's term + 1 and the database clock in microseconds, so that a promoted server
   * whose history lost claims still hands out terms above theirs (unless its clock is behind them
   * by more than the time since the failover). The negative control of the failover property is the
   * + 1 rule alone: terms then repeat after such a failover.
   *
   * @param greatest the database's function of the larger of two values ({@code GREATEST}, SQLite's
   *     {@code MAX})
   * @param term the row's current term ({@code term} or {@code t.term})
   * @param clockMicros the SQL expression of the database clock in microseconds
   */
  default String nextTerm(String greatest, String term, String clockMicros) {
    return greatest + "(" + term + " + 1, " + clockMicros + ")";
  }

  /**
   * A step that puts a session back after an attempt failed with {@code e}. The rule: it never
   * hides the attempt's own error, so this returns and the caller keeps {@code e} as suppressed (or
   * throws it once every step ran, when the attempt itself succeeded).
   */
  default void restoreStepFailed(SQLException e) throws SQLException {}

  /**
   * How a MySQL/MariaDB lease session saves the settings it changes and puts them back afterwards.
   * The rule: the old values are read into Java and bound back, so the pooled session keeps nothing
   * of ours (no {@code @lease_*} user variables).
   *
   * @param settings the assignments the session runs with ({@code time_zone = '+00:00', ...}),
   *     without the {@code SET}
   * @param inJava the dialect's way: reads the old values, sets {@code settings}, returns the
   *     restore that binds the old values back
   * @param c the lease session's connection
   * @return what puts the session back
   */
  default SessionRestore saveMySqlSession(Connection c, String settings, SessionSave inJava)
      throws SQLException {
    return inJava.save();
  }

  /**
   * The row lock that PostgreSQL's transfer takes on the lease row in its CTE, as the claim does:
   * {@code FOR UPDATE} waits for the {@code FOR KEY SHARE} of the old holder's strict verifies. A
   * plain UPDATE's {@code FOR NO KEY UPDATE} does not.
   */
  default String postgresTransferRowLock() {
    return " FOR UPDATE";
  }

  /**
   * What MySQL/MariaDB statements over a list of names (batched renewal, release and transfer, a
   * group's claim and adoption) write after the lease table: the primary key forced, so they read
   * and lock only the rows they name; left to the optimizer they scan and lock the whole table once
   * the list is long.
   */
  default String mySqlBatchIndexHint() {
    return " FORCE INDEX (PRIMARY)";
  }

  /** Saves a session's settings and sets the lease session's; returns what puts them back. */
  @FunctionalInterface
  interface SessionSave {
    SessionRestore save() throws SQLException;
  }

  /** Puts a session's settings back. */
  @FunctionalInterface
  interface SessionRestore {
    void run() throws SQLException;
  }
}
