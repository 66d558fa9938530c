package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.OptionsAccess;
import dev.lease.jdbc.internal.FenceInternals;
import dev.lease.jdbc.internal.FenceRules;
import dev.lease.jdbc.internal.sql.SqlKind;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlStatement;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.SQLException;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * Deliberately broken variants of the fence, for negative controls only: each switches one of the
 * fence's mechanisms ({@link FenceRules}) off, so a test can show that the mechanism is what stops
 * the attack it targets. The weakened code lives here, in test sources, never in lease-jdbc's jar;
 * {@link #weaken} applies a set of them through the guarded entry {@link
 * FenceInternals#rulesForTesting} (test support on the class path), and every fenced connection
 * then logs at ERROR that its fence is DELIBERATELY WEAKENED.
 */
enum WeakenedFence {
  /** Read a text's kind from its first keyword only, as the first release did (issue 9). */
  LEADING_KEYWORD,
  /**
   * Trust the verify's lock after errors, savepoint rollbacks, and (MySQL/MariaDB) batches,
   * multi-statement texts and driver objects handed out by unwrap: no re-verify.
   */
  NO_REVERIFY,
  /** Leave a verified transaction begun as SQL open at close. */
  NO_ROLLBACK_AT_CLOSE,
  /** Let a loss reported as a transaction ends poison the next transaction (no generations). */
  NO_GENERATIONS,
  /** Leave MySQL session bounds in place for borrowers without a lease. */
  NO_SESSION_RESTORE,
  /**
   * Read MySQL session bounds once per session: the fence's record of what it set decides, not what
   * the verify read (a trigger's change goes unseen).
   */
  BOUNDS_READ_ONCE,
  /** Commit the wrapped transaction of an autocommit query when it returns (cursors break). */
  NO_CURSOR_FIX,
  /** Ignore the driver's view of the session (SQL BEGIN, SET autocommit as SQL, ...). */
  NO_DRIVER_SESSION,
  /** Keep a verified transaction open for the next thread a pool hands the connection to. */
  NO_ABANDON_CHECK,
  /**
   * Run commits written as SQL (COMMIT, END, MySQL implicit commits, SET autocommit = 1) and {@code
   * setAutoCommit(true)} without the checks of {@code commit()}, and let MySQL/MariaDB {@code XA
   * PREPARE} through under STRICT.
   */
  NO_COMMIT_CHECKS,
  /**
   * Take {@code isReadOnly()} for the server's answer: a flagged connection whose transaction can
   * write gets no lock, and SKIP no verify.
   */
  TRUST_READ_ONLY_FLAG,
  /** Hand out driver objects through {@code unwrap} after the transaction's verify only. */
  NO_UNWRAP_CHECKS,
  /** Send the verify in the same round trip as the first statement but ignore an empty result. */
  PIGGYBACK_IGNORES_REFUSAL,
  /**
   * Hand out the driver's arrays, LOBs, refs, structs and {@code getObject} values unwrapped, as
   * before issue 25 (their result sets and writes bypass the fence).
   */
  RAW_DRIVER_OBJECTS,
  /** Keep a refusal by the database to the fence: the lease stays held locally (issue 23). */
  REFUSAL_NOT_REPORTED,
  /**
   * Commit without reading the lease's own state: only the loss listener, which runs later on the
   * loss executor, poisons a transaction whose lease was lost (issue 23).
   */
  COMMIT_TRUSTS_LOSS_LISTENER,
  /**
   * Report a failure of a transaction whose lease is no longer held as the database's error alone
   * (no lease-lost cause), and fail the rollback of a session the server already ended (issue 20).
   */
  LOSS_AS_DATABASE_ERROR,
  /**
   * The refusal mechanism before issue 25: the client reads the verify's empty result, commits
   * carry no proof, the server's transaction state is not read.
   */
  PREVIOUS_REFUSAL,
  /**
   * Read MySQL/MariaDB implicit-commit statements as ordinary ones, as for a statement the lexer
   * does not know commits (MariaDB's CREATE TEMPORARY SEQUENCE before the review): shows what the
   * server's transaction state and the re-verify after batches catch without the lexer.
   */
  UNKNOWN_IMPLICIT_COMMITS,
  /**
   * Take any error whose message contains {@code Dialect.REFUSAL_MARKER} for the server's refusal,
   * as before the review: an application's error echoing the marker from user data (a duplicate
   * key) loses a held lease.
   */
  REFUSAL_BY_MARKER_TEXT,
  /**
   * PostgreSQL: commit a read-only transaction without a proof, as before the review (its NOTIFY
   * reaches listeners after a successor's claim).
   */
  NO_READ_ONLY_PROOF,
  /**
   * MySQL/MariaDB: send a LOCK TABLES under a lease without checking that its list names the lease
   * table, as before issue 25 item 6 (every later statement fails with the server's "was not locked
   * with LOCK TABLES").
   */
  LOCK_TABLES_UNCHECKED,
  /**
   * Name the lease table in the verify and the commit's proof as configured (unqualified, no
   * partition), as before issue 35: a session's temporary table of that name, its {@code
   * search_path} or {@code USE} decides what the verify reads; PostgreSQL's operators are the
   * session's too ({@code =}, not {@code OPERATOR(pg_catalog.=)}).
   */
  UNQUALIFIED_TABLE,
  /**
   * Act on a driver's cached session flags without asking the server (issue 35 item 4): MySQL
   * Connector/J's autocommit flag after a pool's {@code isValid()} switches the driver to manual
   * commit.
   */
  TRUST_CACHED_SESSION,
  /**
   * Keep the poison of a refused autocommit statement after it, and refuse a statement with no
   * lease bound that meets a poisoned transaction (issue 35 item 5).
   */
  POISON_OUTLIVES,
  /**
   * Run a statement whose effect lands outside the verified transaction's lock (MySQL's implicit
   * commits and routines, PostgreSQL's VACUUM, INSERT DELAYED) after a verify of its own whatever
   * the policy, as before issue 35 item 2.
   */
  EFFECTS_OUTSIDE_THE_LOCK,
  /**
   * Keep the physical connection after a transaction in which driver objects were handed out, as
   * before issue 35 item 3: a handle kept past its transaction writes unfenced.
   */
  DRIVER_OBJECTS_OUTLIVE,
  /**
   * PostgreSQL: every STRICT commit carries the verify in its round trip, in doubt or not, as
   * before issue 36 (not a weakening: the cost baseline the statement counts compare with).
   */
  PROVES_EVERY_COMMIT;

  /** This weakening alone, as rules. */
  FenceRules rules() {
    return new Rules(EnumSet.of(this));
  }

  /**
   * {@code b} with {@code ws} switched off, besides what {@code b}'s rules already switch off,
   * through the guarded entry.
   */
  static FencingOptions.Builder weaken(FencingOptions.Builder b, WeakenedFence... ws) {
    Set<WeakenedFence> off = EnumSet.noneOf(WeakenedFence.class);
    if (OptionsAccess.rules(b.build()) instanceof Rules r) {
      off.addAll(r.off);
    }
    off.addAll(List.of(ws));
    return FenceInternals.rulesForTesting(b, new Rules(off));
  }

  /** {@code b} with {@code refusal}: {@link Refusal#CLIENT} is {@link #PREVIOUS_REFUSAL}. */
  static FencingOptions.Builder refusal(FencingOptions.Builder b, Refusal refusal) {
    return refusal == Refusal.CLIENT ? weaken(b, PREVIOUS_REFUSAL) : b;
  }

  /** The weakenings of {@code options} (empty for the production rules). */
  static Set<WeakenedFence> of(FencingOptions options) {
    return OptionsAccess.rules(options) instanceof Rules r ? r.off : Set.of();
  }

  /** The production rules with a set of mechanisms switched off. */
  static final class Rules implements FenceRules {
    final Set<WeakenedFence> off;

    Rules(Set<WeakenedFence> off) {
      this.off = Set.copyOf(off);
    }

    private boolean on(WeakenedFence w) {
      return !off.contains(w);
    }

    @Override
    public String verifySql(Lease lease, boolean strict) {
      return unqualified(
          lease,
          on(PREVIOUS_REFUSAL)
              ? FenceRules.super.verifySql(lease, strict)
              : LeaseInternals.clientCheckedVerifySql(lease, strict));
    }

    @Override
    public String commitProofSql(Lease lease, boolean strict) {
      return unqualified(
          lease,
          on(PREVIOUS_REFUSAL)
              ? FenceRules.super.commitProofSql(lease, strict)
              : verifySql(lease, strict));
    }

    /** {@link #UNQUALIFIED_TABLE}: the table as configured, PostgreSQL's operators unqualified. */
    private String unqualified(Lease lease, String sql) {
      if (on(UNQUALIFIED_TABLE)) {
        return sql;
      }
      Dialect d = LeaseInternals.dialect(lease.manager());
      return sql.replace(d.reference(), d.table()).replace("OPERATOR(pg_catalog.=)", "=");
    }

    @Override
    public boolean provesOnlyInDoubt() {
      return on(PROVES_EVERY_COMMIT);
    }

    @Override
    public boolean confirmsCachedSessionState() {
      return on(TRUST_CACHED_SESSION);
    }

    @Override
    public boolean poisonEndsWithItsTransaction() {
      return on(POISON_OUTLIVES);
    }

    @Override
    public boolean refusesEffectsOutsideTheLock() {
      return on(EFFECTS_OUTSIDE_THE_LOCK);
    }

    @Override
    public boolean retiresConnectionsOfDriverObjects() {
      return on(DRIVER_OBJECTS_OUTLIVE);
    }

    @Override
    public boolean commitCarriesProof() {
      return on(PREVIOUS_REFUSAL);
    }

    @Override
    public boolean readsServerTransactionState() {
      return on(PREVIOUS_REFUSAL);
    }

    @Override
    public boolean isRefusal(SQLException e) {
      return on(REFUSAL_BY_MARKER_TEXT) ? FenceRules.super.isRefusal(e) : mentionsMarker(e);
    }

    @Override
    public boolean reportsRefusalToLease() {
      return on(REFUSAL_NOT_REPORTED);
    }

    @Override
    public boolean readsPiggybackedVerify() {
      return on(PIGGYBACK_IGNORES_REFUSAL);
    }

    @Override
    public SqlSummary read(SqlSummary s, String text, SqlLexer lexer) {
      if (!on(LEADING_KEYWORD)) {
        List<SqlStatement> all = text == null ? List.of() : lexer.statements(text);
        return SqlSummary.one(all.isEmpty() ? SqlKind.OTHER : all.get(0).kind());
      }
      if (on(UNKNOWN_IMPLICIT_COMMITS) || !s.has(SqlKind.IMPLICIT_COMMIT)) {
        return s;
      }
      EnumSet<SqlKind> kinds = EnumSet.copyOf(s.kinds());
      kinds.remove(SqlKind.IMPLICIT_COMMIT);
      kinds.add(SqlKind.OTHER);
      SqlKind single = s.single() == SqlKind.IMPLICIT_COMMIT ? SqlKind.OTHER : s.single();
      return SqlSummary.of(kinds, s.count(), single, s.ambiguous(), s.chain());
    }

    @Override
    public boolean reverifiesAfterDoubt() {
      return on(NO_REVERIFY);
    }

    @Override
    public boolean asksDriverSession() {
      return on(NO_DRIVER_SESSION);
    }

    @Override
    public boolean tiesLossToItsTransaction() {
      return on(NO_GENERATIONS);
    }

    @Override
    public boolean commitReadsLeaseState() {
      return on(COMMIT_TRUSTS_LOSS_LISTENER);
    }

    @Override
    public boolean reportsLossAsLeaseLost() {
      return on(LOSS_AS_DATABASE_ERROR);
    }

    @Override
    public boolean checksCommitsWrittenAsSql() {
      return on(NO_COMMIT_CHECKS);
    }

    @Override
    public boolean rollsBackVerifiedTransactionAtClose() {
      return on(NO_ROLLBACK_AT_CLOSE);
    }

    @Override
    public boolean checksAbandonedTransactions() {
      return on(NO_ABANDON_CHECK);
    }

    @Override
    public boolean restoresSessionBounds() {
      return on(NO_SESSION_RESTORE);
    }

    @Override
    public boolean trustsOnlyTheBoundsTheVerifyRead() {
      return on(BOUNDS_READ_ONCE);
    }

    @Override
    public boolean keepsAutoCommitCursorsOpen() {
      return on(NO_CURSOR_FIX);
    }

    @Override
    public boolean checksLockTables() {
      return on(LOCK_TABLES_UNCHECKED);
    }

    @Override
    public boolean asksServerWhetherReadOnly() {
      return on(TRUST_READ_ONLY_FLAG);
    }

    @Override
    public boolean provesReadOnlyCommits() {
      return on(NO_READ_ONLY_PROOF);
    }

    @Override
    public boolean checksUnwrap() {
      return on(NO_UNWRAP_CHECKS);
    }

    @Override
    public boolean wrapsDriverObjects() {
      return on(RAW_DRIVER_OBJECTS);
    }

    @Override
    public String toString() {
      return off.toString();
    }
  }

  /** The check {@link #REFUSAL_BY_MARKER_TEXT} restores: the marker anywhere in the chain. */
  static boolean mentionsMarker(SQLException e) {
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (String.valueOf(t.getMessage()).contains(Dialect.REFUSAL_MARKER)
          || (t instanceof SQLException s
              && s.getNextException() != null
              && String.valueOf(s.getNextException().getMessage())
                  .contains(Dialect.REFUSAL_MARKER))) {
        return true;
      }
    }
    return false;
  }
}
