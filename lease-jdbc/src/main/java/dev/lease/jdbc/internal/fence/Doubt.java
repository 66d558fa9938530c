package dev.lease.jdbc.internal.fence;

/**
 * Why the fence doubts that the verify's lock still covers the open transaction: the one list
 * (DESIGN.md "Fencing"; docs/fencing.md "When a commit proves itself"). In doubt, the next
 * statement verifies again, and a commit proves itself: on PostgreSQL the verify rides in the
 * COMMIT's own round trip, elsewhere it runs first. Out of doubt, a STRICT commit carries nothing:
 * the verify's share lock on the lease row, held since the verify, orders it before a successor's
 * claim.
 *
 * <p>Each member has a test whose stale write the doubt refuses, beside a control that ignores the
 * doubt ({@code FenceRules.reverifiesAfterDoubt}) and commits it.
 */
enum Doubt {
  /**
   * A statement failed: the server may have rolled the transaction back and freed the lock (MySQL
   * deadlock, a lock wait timeout with {@code innodb_rollback_on_timeout}, a reconnect, SQLite's
   * {@code ON CONFLICT ROLLBACK}; on PostgreSQL an error aborts the transaction, and a driver that
   * rolls back to a savepoint of its own ({@code autosave}) keeps it going).
   */
  DRIVER_ERROR,

  /**
   * A rollback to a savepoint ({@code rollback(Savepoint)}, {@code ROLLBACK TO} as SQL): PostgreSQL
   * frees the row locks taken after the savepoint, the verify's among them when the savepoint came
   * first.
   */
  SAVEPOINT_ROLLBACK,

  /**
   * MySQL/MariaDB {@code CALL}, {@code EXECUTE}, {@code BEGIN NOT ATOMIC}: the routine may commit
   * inside (and with it the lock), or switch autocommit behind the driver's cached flag.
   */
  ROUTINE,

  /**
   * MySQL/MariaDB: a batch or a text of several statements, whose implicit commits the lexer may
   * not know (MariaDB's {@code CREATE TEMPORARY SEQUENCE} was one): the driver's in-transaction
   * flag, read after the whole call, no longer proves the verified transaction is the open one.
   */
  UNREAD_TEXT,

  /**
   * A driver object that reaches the database was handed out in the transaction ({@code unwrap} to
   * a vendor type): its calls bypass the wrapper, a {@code COMMIT} and a new transaction included.
   * Lasts until the transaction ends ({@link FencedTransaction#driverObjects}).
   */
  DRIVER_OBJECT,

  /**
   * The driver says no transaction is open although the fence verified one: it ended behind the
   * fence (an implicit commit, a commit through a driver object), and what runs now runs in a
   * transaction no verify covers.
   */
  DRIVER_STATE_DISAGREES
}
