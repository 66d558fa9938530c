package dev.lease.jdbc;

import dev.lease.core.Lease;
import java.sql.SQLException;

/**
 * A fenced transaction was refused or poisoned because its lease is not (or no longer) held. Roll
 * the transaction back; nothing of it commits.
 *
 * <p>SQLStates, in the implementation-defined class {@code LF} (SQL standard: classes starting with
 * a letter I–Z are implementation-defined), chosen so that:
 *
 * <ul>
 *   <li>HikariCP does not evict the connection: it treats {@code 08xxx}, {@code 57P01-03}, {@code
 *       0A000} and a few vendor codes as broken, nothing else;
 *   <li>Spring does not translate it into a transient, retryable or concurrency failure (its
 *       SQLState translator maps classes {@code 40}/{@code 61} to pessimistic locking and {@code
 *       08}, {@code 53}, {@code 54}, {@code 57}, {@code 58} to resource failures); it arrives as an
 *       {@code UncategorizedSQLException} with this exception as its cause. (The Spring Boot
 *       starter translates {@value #REFUSED} and {@value #POISONED} into its own {@code
 *       LeaseLostDataAccessException}, a concurrency failure.)
 * </ul>
 *
 * <table>
 *   <caption>SQLStates</caption>
 *   <tr><td>{@value #REFUSED}</td><td>the verify found that this holder no longer holds the lease at
 *       this term (or the lease was already lost locally): the transaction was refused</td></tr>
 *   <tr><td>{@value #POISONED}</td><td>the transaction was refused before, or its lease was lost while
 *       it was open: every statement and {@code commit()} fail until {@code rollback()}</td></tr>
 *   <tr><td>{@value #LEASE_CHANGED}</td><td>a different lease (or none) is bound to the thread than the
 *       one the transaction was verified under</td></tr>
 *   <tr><td>{@value #AUTOCOMMIT_REFUSED}</td><td>an autocommit statement under a lease with
 *       {@link AutoCommitPolicy#REFUSE}</td></tr>
 *   <tr><td>{@value #TRANSACTION_CONTROL_MIXED}</td><td>under a lease, a SQL text (or batch) holding
 *       transaction control together with other statements, or a text whose statements cannot be
 *       told apart: refused before any of it reached the database</td></tr>
 *   <tr><td>{@value #OUTSIDE_TRANSACTION}</td><td>under a lease, a statement whose effect would
 *       land outside the verified transaction ({@link OutsideTransactionPolicy#REFUSE}), or
 *       MySQL/MariaDB {@code INSERT DELAYED}: refused before it was sent</td></tr>
 * </table>
 */
public class LeaseLostSQLException extends SQLException {

  private static final long serialVersionUID = 1L;

  /**
   * The verify refused the transaction: the lease is not held by this holder at this term. When the
   * database refused it, the cause is the server's own error (its message contains {@code LF001
   * lease not held}), and nothing sent with the verify or after it in the same round trip ran.
   */
  public static final String REFUSED = "LF001";

  /** The transaction is poisoned (refused earlier, or its lease was lost while it was open). */
  public static final String POISONED = "LF002";

  /** The lease bound to the thread changed (or was unbound) inside a verified transaction. */
  public static final String LEASE_CHANGED = "LF003";

  /** An autocommit statement under a lease was refused by {@link AutoCommitPolicy#REFUSE}. */
  public static final String AUTOCOMMIT_REFUSED = "LF004";

  /**
   * Under a lease, a text or batch mixed transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT,
   * SET autocommit, MySQL's implicit commits, CALL, ...) with other statements, or could not be
   * read unambiguously; nothing of it was sent. Also MySQL/MariaDB {@code XA PREPARE} under STRICT,
   * which releases the verify's share lock (MariaDB 10.6+): {@code XA COMMIT xid ONE PHASE} commits
   * the branch with the lock held. Also MySQL/MariaDB {@code LOCK TABLES} whose list leaves out the
   * lease table, which every later statement under the lease must read to verify.
   */
  public static final String TRANSACTION_CONTROL_MIXED = "LF005";

  /**
   * Under a lease, a statement whose effect would land outside the verified transaction, where
   * nothing orders it before a successor's claim ({@link OutsideTransactionPolicy#REFUSE}: MySQL's
   * implicit commits and routines, PostgreSQL's VACUUM or CREATE INDEX CONCURRENTLY, ...), or
   * MySQL/MariaDB {@code INSERT DELAYED}; nothing of it was sent. Run it without a lease bound.
   */
  public static final String OUTSIDE_TRANSACTION = "LF006";

  /**
   * Why the fence refused, whatever the SQLState: catch {@code LeaseLostSQLException} and read this
   * instead of comparing SQLStates. A poisoned transaction ({@value #POISONED}) tells what poisoned
   * it: the same reason as the refusal or the loss that came first.
   */
  public enum Reason {
    /**
     * The database refused the verify: another holder claimed the lease after this one (or its row
     * is gone). {@link #getCause()} is the server's error when the server raised one.
     */
    REFUSED_BY_DATABASE,
    /**
     * The lease was already lost or released in this process (its local deadline passed, a renewal
     * failed, {@code close()}), before or while the transaction ran: refused without asking the
     * database. A holder paused inside its transaction past its lease meets this one.
     */
    LOST_LOCALLY,
    /** A different lease, or none, was bound to the thread inside a verified transaction. */
    LEASE_CHANGED,
    /**
     * The verify could not run (a connection or server error): the transaction cannot show that it
     * holds its lease. {@link #getCause()} is the error.
     */
    VERIFY_FAILED,
    /**
     * The statement is not allowed under a lease ({@value #AUTOCOMMIT_REFUSED}, {@value
     * #TRANSACTION_CONTROL_MIXED}, {@value #OUTSIDE_TRANSACTION}): nothing of it was sent, and the
     * lease may still be held. Change the statement, not the lease.
     */
    NOT_ALLOWED_UNDER_LEASE
  }

  private final transient Lease lease;
  private final Reason reason;

  /** With the reason its SQLState implies ({@link #reasonOf}). */
  public LeaseLostSQLException(String message, String sqlState, Lease lease, Throwable cause) {
    this(message, sqlState, lease, cause, reasonOf(sqlState, cause));
  }

  public LeaseLostSQLException(
      String message, String sqlState, Lease lease, Throwable cause, Reason reason) {
    super(message, sqlState, cause);
    this.lease = lease;
    this.reason = java.util.Objects.requireNonNull(reason, "reason");
  }

  /**
   * The reason a SQLState implies when nothing more is known: {@value #REFUSED} with a cause is the
   * database's refusal, without one a local one; {@value #POISONED} a local loss.
   */
  static Reason reasonOf(String sqlState, Throwable cause) {
    if (REFUSED.equals(sqlState)) {
      return cause != null ? Reason.REFUSED_BY_DATABASE : Reason.LOST_LOCALLY;
    }
    if (LEASE_CHANGED.equals(sqlState)) {
      return Reason.LEASE_CHANGED;
    }
    if (POISONED.equals(sqlState)) {
      return Reason.LOST_LOCALLY;
    }
    return Reason.NOT_ALLOWED_UNDER_LEASE;
  }

  /** Why the fence refused: the lease's fate, or a statement not allowed under a lease. */
  public Reason reason() {
    return reason;
  }

  /** The lease the transaction ran under, if known. */
  public Lease lease() {
    return lease;
  }
}
