package dev.lease.jdbc;

/** Whether read-only transactions ({@link java.sql.Connection#isReadOnly()}) are verified. */
public enum ReadOnlyPolicy {
  /**
   * Verify them like any other (the verify is a pure SELECT, allowed in read-only transactions).
   */
  VERIFY,
  /**
   * Skip the verify where the server says the transaction is read-only (it cannot write stale data,
   * but it may read data a successor already changed): PostgreSQL's {@code transaction_read_only}
   * is asked when {@code isReadOnly()} is set (one round trip); SQLite connections opened
   * read-only; never on MySQL/MariaDB, whose server cannot tell.
   */
  SKIP
}
