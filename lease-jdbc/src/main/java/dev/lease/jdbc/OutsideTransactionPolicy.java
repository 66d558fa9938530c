package dev.lease.jdbc;

/**
 * What a statement that cannot run inside a verified transaction does while a lease is bound: its
 * effect would land outside the verify's lock, where nothing orders it before a successor's claim.
 * These are MySQL/MariaDB statements that commit implicitly (DDL other than temporary tables,
 * {@code TRUNCATE}, {@code GRANT}, {@code ANALYZE}/{@code OPTIMIZE TABLE}, {@code FLUSH}, ...) and
 * routines ({@code CALL}, {@code EXECUTE}, {@code BEGIN NOT ATOMIC}: what they commit inside is
 * past the lock), PostgreSQL's statements that cannot run in a transaction block ({@code VACUUM},
 * {@code CLUSTER}, {@code REINDEX}, {@code CREATE INDEX CONCURRENTLY}, {@code CREATE DATABASE},
 * {@code ALTER SYSTEM}, ...), SQLite's {@code VACUUM}. Statements whose effect stays in the session
 * ({@code LOCK}/{@code UNLOCK TABLES}, PostgreSQL {@code DISCARD}, SQLite {@code ATTACH}, {@code
 * DETACH} and its configuration {@code PRAGMA}s) run as they are. MySQL/MariaDB {@code INSERT
 * DELAYED} (written by the server after the statement returned) is refused under a lease whatever
 * the policy.
 */
public enum OutsideTransactionPolicy {
  /**
   * Refused before anything is sent, SQLState {@value LeaseLostSQLException#OUTSIDE_TRANSACTION}:
   * run such statements without a lease bound (they are then not fenced: migrations, maintenance).
   * The default in {@link FencingMode#STRICT}.
   */
  REFUSE,
  /**
   * Runs the statement right after a verify of its own, as the fence did before version 0.1's issue
   * 35: the two are not atomic, so a holder paused between them, or a statement that runs longer
   * than the margin between the holder's local deadline and the lease's expiry, can land its effect
   * after a successor's claim. The default in {@link FencingMode#VERIFY}, whose guarantee rests on
   * that margin anyway.
   */
  VERIFY_FIRST
}
