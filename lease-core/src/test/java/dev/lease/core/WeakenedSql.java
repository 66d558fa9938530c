package dev.lease.core;

import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.SqlRules;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The dialects' {@link SqlRules} broken on purpose, one mechanism per factory, for the negative
 * controls of the tests; never in the jar. Each factory restores a bug the dialect tests must
 * catch. Applied with {@link #applyTo} ({@link LeaseInternals#sqlRulesForTesting}, honoured only in
 * a test JVM).
 */
public final class WeakenedSql implements SqlRules, Weakening {

  private enum Bug {
    TERM_FROM_ZERO,
    TERM_PLUS_ONE,
    RESTORE_HIDES_ERROR,
    SESSION_USER_VARIABLES,
    TRANSFER_WITHOUT_FOR_UPDATE,
    BATCH_SCANS_TABLE
  }

  private final Bug bug;

  private WeakenedSql(Bug bug) {
    this.bug = bug;
  }

  /**
   * Terms count from 0 without the clock: a new lease row starts at term 0 and a hand-over writes
   * term + 1 (terms repeat after the row is deleted). The clock floor of a hand-over alone would
   * keep them apart, so this control drops both.
   */
  public static WeakenedSql termFromZero() {
    return new WeakenedSql(Bug.TERM_FROM_ZERO);
  }

  /**
   * A hand-over writes term + 1, without the database clock's floor: a claim lost with a failover
   * (the promoted server never saw it) is granted again at the same term.
   */
  public static WeakenedSql termPlusOne() {
    return new WeakenedSql(Bug.TERM_PLUS_ONE);
  }

  /** A failed session restore after a failed attempt replaces the attempt's own error. */
  public static WeakenedSql restoreHidesError() {
    return new WeakenedSql(Bug.RESTORE_HIDES_ERROR);
  }

  /** MySQL/MariaDB sessions keep the saved settings in {@code @lease_*} user variables. */
  public static WeakenedSql sessionUserVariables() {
    return new WeakenedSql(Bug.SESSION_USER_VARIABLES);
  }

  /**
   * PostgreSQL's transfer is a plain UPDATE without the {@code FOR UPDATE} of the claim: it does
   * not wait for the old holder's strict-verified transactions ({@code FOR KEY SHARE}).
   */
  public static WeakenedSql transferWithoutForUpdate() {
    return new WeakenedSql(Bug.TRANSFER_WITHOUT_FOR_UPDATE);
  }

  /**
   * MySQL/MariaDB statements over a list of names leave the index to the optimizer, which scans and
   * locks the whole table once the list is long.
   */
  public static WeakenedSql batchScansTable() {
    return new WeakenedSql(Bug.BATCH_SCANS_TABLE);
  }

  /** Builds {@code builder}'s manager with these rules. */
  public LeaseManager.Builder applyTo(LeaseManager.Builder builder) {
    return LeaseInternals.sqlRulesForTesting(builder, this);
  }

  @Override
  public String startTerm(String clockMicros) {
    return bug == Bug.TERM_FROM_ZERO ? "0" : SqlRules.super.startTerm(clockMicros);
  }

  @Override
  public String nextTerm(String greatest, String term, String clockMicros) {
    // the clock stays in the text (times zero): a statement that binds it keeps its parameter
    return bug == Bug.TERM_FROM_ZERO || bug == Bug.TERM_PLUS_ONE
        ? "(" + term + " + 1 + 0 * (" + clockMicros + "))"
        : SqlRules.super.nextTerm(greatest, term, clockMicros);
  }

  @Override
  public void restoreStepFailed(SQLException e) throws SQLException {
    if (bug == Bug.RESTORE_HIDES_ERROR) {
      throw e; // the bug: a finally that throws replaces the attempt's own error
    }
  }

  @Override
  public SessionRestore saveMySqlSession(Connection c, String settings, SessionSave inJava)
      throws SQLException {
    if (bug != Bug.SESSION_USER_VARIABLES) {
      return SqlRules.super.saveMySqlSession(c, settings, inJava);
    }
    plain(
        c,
        "SET @lease_saved_tz = @@session.time_zone,"
            + " @lease_saved_lw = @@session.innodb_lock_wait_timeout, "
            + settings);
    return () ->
        plain(c, "SET time_zone = @lease_saved_tz, innodb_lock_wait_timeout = @lease_saved_lw");
  }

  @Override
  public String postgresTransferRowLock() {
    return bug == Bug.TRANSFER_WITHOUT_FOR_UPDATE ? "" : SqlRules.super.postgresTransferRowLock();
  }

  @Override
  public String mySqlBatchIndexHint() {
    return bug == Bug.BATCH_SCANS_TABLE ? "" : SqlRules.super.mySqlBatchIndexHint();
  }

  @Override
  public String toString() {
    return bug.name();
  }

  private static void plain(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
