package dev.lease.jdbc;

/** How a fenced transaction is verified. */
public enum FencingMode {
  /**
   * The verify statement also takes a lock on the lease row that the claim of the next term must wait
   * for, so no transaction verified under term t commits after the claim of term t+1 commits, however
   * long the holder pauses between verify and commit. PostgreSQL {@code FOR KEY SHARE} (with the
   * claim taking {@code FOR UPDATE}), MySQL/MariaDB {@code LOCK IN SHARE MODE}, SQLite: the verify is
   * the first read of the transaction and SQLite's single writer does the rest. The default.
   */
  STRICT,
  /**
   * A plain verify as the first statement: cheaper, and safe only while transactions are shorter than
   * the margin between the holder's local deadline and the lease's expiry (on SQLite the same as
   * STRICT).
   */
  VERIFY
}
