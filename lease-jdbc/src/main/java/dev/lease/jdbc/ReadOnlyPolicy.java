package dev.lease.jdbc;

/** Whether read-only transactions ({@link java.sql.Connection#isReadOnly()}) are verified. */
public enum ReadOnlyPolicy {
  /**
   * Verify them like any other (the verify is a pure SELECT, allowed in read-only transactions).
   */
  VERIFY,
  /**
   * Skip the verify: a read-only transaction cannot write stale data, but it may read data a
   * successor already changed. Costs one {@code isReadOnly()} call per transaction.
   */
  SKIP
}
