package dev.lease.jdbc;

/** What a statement executed in autocommit mode does while a lease is bound to the thread. */
public enum AutoCommitPolicy {
  /**
   * Runs the statement as its own verified transaction: autocommit off, verify, statement, commit,
   * autocommit back on. A refused verify means the statement never ran. The default.
   */
  VERIFIED_TRANSACTION,
  /**
   * Runs the verify as a statement of its own just before; the two are not atomic (a claim can
   * commit between them), so this only narrows the window. One round trip cheaper than the default.
   */
  VERIFY_ONLY,
  /** Fails the statement with SQLState {@value LeaseLostSQLException#AUTOCOMMIT_REFUSED}. */
  REFUSE
}
