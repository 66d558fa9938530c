package dev.lease.jdbc.internal;

import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.SQLException;

/**
 * The rules of the fence's mechanisms that the negative controls of the tests break one at a time:
 * how the database refuses a lease no longer held, how a statement's text is read, what a doubt
 * about the verify's lock does, the checks of commits, hand-outs and sessions. The default methods
 * are the fence's rules; production runs {@link #PRODUCTION}.
 *
 * <p>A weakened implementation (the control of one mechanism) lives in test sources only
 * (lease-jdbc's {@code WeakenedFence}, the conformance runner's), never in the jar, and reaches a
 * fence through {@link FenceInternals#rulesForTesting}, honoured only with lease's test support or
 * conformance runner on the class path; the benchmarks' {@code PreviousMechanism} (earlier
 * mechanisms, for comparison) through {@link FenceInternals#rulesForComparison}, the same guard
 * without the per-connection ERROR log, which would be timed. Production code asks a rule here and
 * branches on no test switch.
 *
 * <p><b>Not API.</b> It may change in any release.
 */
public interface FenceRules {

  /** The rules every production fence runs. */
  FenceRules PRODUCTION = new FenceRules() {};

  // ---- the refusal (DESIGN-NOTE.md)

  /**
   * The verify's text for {@code lease} (parameters: {@code LeaseInternals.verifyParameters}): it
   * raises an error in the server when the lease row does not match, so nothing sent with it or
   * after it runs.
   */
  default String verifySql(Lease lease, boolean strict) {
    return LeaseInternals.verifySql(lease, strict);
  }

  /** The verify a commit carries (PostgreSQL: in the COMMIT's round trip). */
  default String commitProofSql(Lease lease, boolean strict) {
    return LeaseInternals.commitProofSql(lease, strict);
  }

  /**
   * Whether a commit under a lease proves itself where the fence's picture of the transaction may
   * be wrong (PostgreSQL: the verify rides in the COMMIT's round trip; elsewhere a verify first).
   */
  default boolean commitCarriesProof() {
    return true;
  }

  /**
   * Whether a STRICT commit on PostgreSQL proves itself only in doubt (the fence's {@code Doubt}
   * list), leaning on the verify's lock otherwise; false: every commit carries the proof, as before
   * issue 36 (the benchmarks' baseline).
   */
  default boolean provesOnlyInDoubt() {
    return true;
  }

  /** Whether the driver's view of the server's transaction state can send a verify again. */
  default boolean readsServerTransactionState() {
    return true;
  }

  /**
   * Whether {@code e} is the server's refusal of a verify (this process's marker text and the
   * refusal's own SQLState), not an application statement's error that echoes the marker.
   */
  default boolean isRefusal(SQLException e) {
    return LeaseInternals.isRefusal(e);
  }

  /** Whether the database's refusal makes the lease lost at once (later transactions refused). */
  default boolean reportsRefusalToLease() {
    return true;
  }

  /** Whether a piggybacked verify's empty result (no row) refuses the transaction. */
  default boolean readsPiggybackedVerify() {
    return true;
  }

  // ---- reading the text

  /**
   * What the fence takes {@code text} to hold, given the lexer's {@code summary} of every statement
   * in it: the summary itself, every statement under every reading of its settings.
   */
  default SqlSummary read(SqlSummary summary, String text, SqlLexer lexer) {
    return summary;
  }

  // ---- the transaction's state

  /**
   * Whether a doubt about the verify's lock (a driver error, a savepoint rollback, a MySQL batch or
   * driver object that may have committed behind the fence) makes the next statement and the commit
   * verify again.
   */
  default boolean reverifiesAfterDoubt() {
    return true;
  }

  /** Whether the driver is asked where the session is (SQL BEGIN, SET autocommit as SQL, ...). */
  default boolean asksDriverSession() {
    return true;
  }

  /** Whether a loss listener is tied to its own transaction, so it never poisons the next one. */
  default boolean tiesLossToItsTransaction() {
    return true;
  }

  /** Whether a commit reads the lease's own state before it runs (not only the loss listener). */
  default boolean commitReadsLeaseState() {
    return true;
  }

  /**
   * Whether a failure of a transaction whose lease is no longer held is reported as the lease's
   * loss (the database's error as its cause), and a failed rollback of the session the server ended
   * is no error.
   */
  default boolean reportsLossAsLeaseLost() {
    return true;
  }

  // ---- commits and boundaries

  /**
   * Whether commits written as SQL (COMMIT, END, MySQL implicit commits, SET autocommit = 1) and
   * {@code setAutoCommit(true)} get the checks of {@code commit()}, and MySQL/MariaDB {@code XA
   * PREPARE} is refused under STRICT.
   */
  default boolean checksCommitsWrittenAsSql() {
    return true;
  }

  /** Whether a verified transaction begun as SQL is rolled back at close. */
  default boolean rollsBackVerifiedTransactionAtClose() {
    return true;
  }

  /** Whether a verified transaction is refused to another thread a pool hands the connection to. */
  default boolean checksAbandonedTransactions() {
    return true;
  }

  /**
   * Whether a driver's cached session flags are confirmed by the server before the fence acts on
   * them in a way that changes the application's session (MySQL Connector/J's autocommit flag after
   * a pool's {@code isValid()}).
   */
  default boolean confirmsCachedSessionState() {
    return true;
  }

  /**
   * Whether poison ends with the transaction it belongs to: a refused autocommit statement leaves
   * none behind, and a poisoned transaction left open is rolled back, not refused, when a statement
   * with no lease bound meets it.
   */
  default boolean poisonEndsWithItsTransaction() {
    return true;
  }

  /**
   * Whether a statement whose effect would land outside the verified transaction's lock is refused
   * under a lease ({@code OutsideTransactionPolicy.REFUSE}, and INSERT DELAYED always).
   */
  default boolean refusesEffectsOutsideTheLock() {
    return true;
  }

  /** Whether MySQL session bounds are restored for borrowers without a lease. */
  default boolean restoresSessionBounds() {
    return true;
  }

  /**
   * Whether the MySQL session bounds the strict verify read decide whether they are set again, not
   * the fence's record of what it set on the session (which a trigger or a routine can change
   * behind it).
   */
  default boolean trustsOnlyTheBoundsTheVerifyRead() {
    return true;
  }

  /** Whether an autocommit query's wrapped transaction stays open while its cursor is read. */
  default boolean keepsAutoCommitCursorsOpen() {
    return true;
  }

  /** Whether a MySQL/MariaDB LOCK TABLES under a lease must name the lease table. */
  default boolean checksLockTables() {
    return true;
  }

  // ---- read-only transactions

  /**
   * Whether the server is asked if a transaction can write (not {@code isReadOnly()}, which pgjdbc
   * answers from memory) before it gets no lock or SKIP no verify.
   */
  default boolean asksServerWhetherReadOnly() {
    return true;
  }

  /** PostgreSQL: whether a read-only transaction's commit carries a proof too (its NOTIFY). */
  default boolean provesReadOnlyCommits() {
    return true;
  }

  // ---- driver objects

  /** Whether driver objects handed out by {@code unwrap} are checked at each call. */
  default boolean checksUnwrap() {
    return true;
  }

  /**
   * Whether the physical connection is retired (closed) when a transaction in which driver objects
   * were handed out ends, so that no handle on it writes after its transaction.
   */
  default boolean retiresConnectionsOfDriverObjects() {
    return true;
  }

  /** Whether the driver's arrays, LOBs, refs, structs and {@code getObject} values are wrapped. */
  default boolean wrapsDriverObjects() {
    return true;
  }
}
