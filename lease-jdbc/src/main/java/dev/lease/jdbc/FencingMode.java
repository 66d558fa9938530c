package dev.lease.jdbc;

/** How a fenced transaction is verified. */
public enum FencingMode {
  /**
   * The verify statement also takes a lock on the lease row that the claim of the next term must
   * wait for, so no transaction verified under term t commits after the claim of term t+1 commits,
   * however long the holder pauses between verify and commit. PostgreSQL {@code FOR KEY SHARE}
   * (with the claim taking {@code FOR UPDATE}), MySQL/MariaDB {@code LOCK IN SHARE MODE}, SQLite:
   * the verify is a no-op {@code UPDATE} of the lease row that takes the database's single write
   * lock first. The default.
   */
  STRICT,
  /**
   * A plain verify as the first statement: cheaper, and safe only while transactions are shorter
   * than the margin between the holder's local deadline and the lease's expiry. On SQLite the plain
   * verify is a SELECT that fixes the transaction's snapshot, so a stale holder's later write still
   * fails (SQLITE_BUSY_SNAPSHOT), but concurrent fenced writers then fail instead of queueing.
   */
  VERIFY
}
