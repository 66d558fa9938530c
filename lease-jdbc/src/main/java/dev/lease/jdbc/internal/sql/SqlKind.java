package dev.lease.jdbc.internal.sql;

/**
 * What one SQL statement does to the transaction it runs in, as {@link SqlLexer} classifies it from
 * its leading keywords. The fence decides from these: whether a statement needs the verify, whether
 * it ends or begins a transaction, and whether it may share a text with others.
 *
 * <p>Everything but {@link #OTHER} is <em>transaction control</em> in the wide sense the fence
 * uses: under a bound lease it must be the only statement of its text (checklist 11 of
 * shared/research/anchors-jdbc-agent.md, issue 9).
 */
public enum SqlKind {

  /** An ordinary statement (query, DML, transactional DDL): runs in the transaction, verified. */
  OTHER,

  /**
   * BEGIN, START TRANSACTION, MySQL XA START: a transaction starts. On MySQL and MariaDB it also
   * commits the one that is open.
   */
  BEGIN,

  /** COMMIT, END (PostgreSQL, SQLite): the transaction commits. */
  COMMIT,

  /** ROLLBACK, ABORT (PostgreSQL): the transaction rolls back. */
  ROLLBACK,

  /** SAVEPOINT: outside a transaction SQLite begins one with it. */
  SAVEPOINT,

  /** RELEASE [SAVEPOINT]: on SQLite it commits when it releases the outermost savepoint. */
  RELEASE,

  /**
   * ROLLBACK TO [SAVEPOINT]: stays in the transaction, but may undo the verify's lock (PostgreSQL
   * releases row locks taken after the savepoint).
   */
  ROLLBACK_TO,

  /**
   * MySQL/MariaDB {@code SET [SESSION] autocommit = ...} (any SET naming autocommit): switching to
   * 1 commits the open transaction, and MySQL Connector/J keeps reporting the mode it last set
   * itself.
   */
  SET_AUTOCOMMIT,

  /**
   * SET TRANSACTION: must run before the transaction's first statement (PostgreSQL) or outside a
   * transaction (MySQL), so it runs without the verify.
   */
  SET_TRANSACTION,

  /**
   * MySQL/MariaDB statements after which (and before which) the server commits implicitly: DDL (but
   * not CREATE/DROP TEMPORARY TABLE), LOCK/UNLOCK TABLES, user and privilege statements,
   * ANALYZE/CHECK/OPTIMIZE/REPAIR TABLE, FLUSH, RESET, replication control (START/STOP
   * REPLICA|SLAVE, CHANGE MASTER|REPLICATION ...) (MySQL manual, "Statements That Cause an Implicit
   * Commit"; classified generously: a false positive costs one verify).
   */
  IMPLICIT_COMMIT,

  /**
   * Statements the database refuses inside a transaction block: PostgreSQL VACUUM, CLUSTER,
   * REINDEX, CREATE/DROP/ALTER DATABASE, CREATE/DROP TABLESPACE, ALTER SYSTEM, CREATE/ALTER/DROP
   * SUBSCRIPTION and anything CONCURRENTLY; SQLite VACUUM.
   */
  NON_TRANSACTIONAL,

  /**
   * Statements whose effect stays in the session and that may not run inside a transaction
   * (PostgreSQL DISCARD; SQLite ATTACH, DETACH, and PRAGMA, several of which are no-ops or errors
   * inside a transaction, except the two that write an application's own value into the database
   * header, {@code user_version} and {@code application_id}, which are ordinary: SQLite makes them
   * part of the transaction). They need no verify.
   */
  SESSION,

  /**
   * MySQL/MariaDB {@code INSERT DELAYED} and {@code REPLACE DELAYED}: the statement returns at once
   * and the server writes the rows later on a thread of its own (MyISAM, MEMORY, ARCHIVE), so their
   * effect lands after any lock the transaction held.
   */
  DELAYED_WRITE,

  /**
   * MySQL/MariaDB CALL, EXECUTE, EXECUTE IMMEDIATE and MariaDB's anonymous BEGIN NOT ATOMIC block:
   * they run statements the fence cannot see, which may commit. (PostgreSQL's CALL and DO are
   * {@link #OTHER}: inside a transaction block PostgreSQL refuses their COMMIT.)
   */
  ROUTINE,

  /**
   * PostgreSQL PREPARE TRANSACTION, MySQL XA END and XA PREPARE: the session's transaction is
   * handed to two-phase commit (it ends in the session; its locks stay with the prepared
   * transaction).
   */
  PREPARE_TRANSACTION,

  /** PostgreSQL COMMIT PREPARED, MySQL XA COMMIT: commits a prepared transaction. */
  COMMIT_PREPARED,

  /** PostgreSQL ROLLBACK PREPARED, MySQL XA ROLLBACK: rolls back a prepared transaction. */
  ROLLBACK_PREPARED;

  /** True for transaction control in the fence's sense: every kind but {@link #OTHER}. */
  public boolean isControl() {
    return this != OTHER;
  }

  /** A ROLLBACK of any kind: of the transaction, to a savepoint, or of a prepared transaction. */
  public boolean isRollback() {
    return this == ROLLBACK || this == ROLLBACK_TO || this == ROLLBACK_PREPARED;
  }
}
