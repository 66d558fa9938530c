package dev.lease.jdbc;

/**
 * What one SQL statement does to the transaction it runs in, as {@link SqlLexer} classifies it from
 * its leading keywords. The fence decides from these: whether a statement needs the verify, whether
 * it ends or begins a transaction, and whether it may share a text with others.
 *
 * <p>Kinds are small ints so that a text's kinds fit in one bit mask ({@link SqlSummary}).
 * Everything but {@link #OTHER} is <em>transaction control</em> in the wide sense the fence uses:
 * under a bound lease it must be the only statement of its text (checklist 11 of
 * shared/research/anchors-jdbc-agent.md, issue 9).
 */
final class SqlKind {

  /** An ordinary statement (query, DML, transactional DDL): runs in the transaction, verified. */
  static final int OTHER = 1;

  /**
   * BEGIN, START TRANSACTION, MySQL XA START: a transaction starts. On MySQL and MariaDB it also
   * commits the one that is open.
   */
  static final int BEGIN = 2;

  /** COMMIT, END (PostgreSQL, SQLite): the transaction commits. */
  static final int COMMIT = 3;

  /** ROLLBACK, ABORT (PostgreSQL): the transaction rolls back. */
  static final int ROLLBACK = 4;

  /** SAVEPOINT: outside a transaction SQLite begins one with it. */
  static final int SAVEPOINT = 5;

  /** RELEASE [SAVEPOINT]: on SQLite it commits when it releases the outermost savepoint. */
  static final int RELEASE = 6;

  /**
   * ROLLBACK TO [SAVEPOINT]: stays in the transaction, but may undo the verify's lock (PostgreSQL
   * releases row locks taken after the savepoint).
   */
  static final int ROLLBACK_TO = 7;

  /**
   * MySQL/MariaDB {@code SET [SESSION] autocommit = ...} (any SET naming autocommit): switching to
   * 1 commits the open transaction, and MySQL Connector/J keeps reporting the mode it last set
   * itself.
   */
  static final int SET_AUTOCOMMIT = 8;

  /**
   * SET TRANSACTION: must run before the transaction's first statement (PostgreSQL) or outside a
   * transaction (MySQL), so it runs without the verify.
   */
  static final int SET_TRANSACTION = 9;

  /**
   * MySQL/MariaDB statements after which (and before which) the server commits implicitly: DDL (but
   * not CREATE/DROP TEMPORARY TABLE), LOCK/UNLOCK TABLES, user and privilege statements,
   * ANALYZE/CHECK/OPTIMIZE/REPAIR TABLE, FLUSH, RESET, replication control (START/STOP
   * REPLICA|SLAVE, CHANGE MASTER|REPLICATION ...) (MySQL manual, "Statements That Cause an Implicit
   * Commit"; classified generously: a false positive costs one verify).
   */
  static final int IMPLICIT_COMMIT = 10;

  /**
   * Statements the database refuses inside a transaction block: PostgreSQL VACUUM, CLUSTER,
   * REINDEX, CREATE/DROP/ALTER DATABASE, CREATE/DROP TABLESPACE, ALTER SYSTEM, DISCARD, CREATE/
   * ALTER/DROP SUBSCRIPTION and anything CONCURRENTLY; SQLite VACUUM, ATTACH, DETACH and PRAGMA
   * (several pragmas are no-ops or errors inside a transaction).
   */
  static final int NON_TRANSACTIONAL = 11;

  /**
   * MySQL/MariaDB CALL, EXECUTE, EXECUTE IMMEDIATE and MariaDB's anonymous BEGIN NOT ATOMIC block:
   * they run statements the fence cannot see, which may commit. (PostgreSQL's CALL and DO are
   * {@link #OTHER}: inside a transaction block PostgreSQL refuses their COMMIT.)
   */
  static final int ROUTINE = 12;

  /**
   * PostgreSQL PREPARE TRANSACTION, MySQL XA END and XA PREPARE: the session's transaction is
   * handed to two-phase commit (it ends in the session; its locks stay with the prepared
   * transaction).
   */
  static final int PREPARE_TRANSACTION = 13;

  /** PostgreSQL COMMIT PREPARED, MySQL XA COMMIT: commits a prepared transaction. */
  static final int COMMIT_PREPARED = 14;

  /** PostgreSQL ROLLBACK PREPARED, MySQL XA ROLLBACK: rolls back a prepared transaction. */
  static final int ROLLBACK_PREPARED = 15;

  /** Bit mask of every kind that is transaction control in the fence's sense (all but OTHER). */
  static final int CONTROL = 0xFFFF & ~(1 << OTHER) & ~1;

  private static final String[] NAMES = {
    "EMPTY",
    "OTHER",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "RELEASE",
    "ROLLBACK_TO",
    "SET_AUTOCOMMIT",
    "SET_TRANSACTION",
    "IMPLICIT_COMMIT",
    "NON_TRANSACTIONAL",
    "ROUTINE",
    "PREPARE_TRANSACTION",
    "COMMIT_PREPARED",
    "ROLLBACK_PREPARED"
  };

  private SqlKind() {}

  /** The kind's name, for messages and tests. */
  static String name(int kind) {
    return kind >= 0 && kind < NAMES.length ? NAMES[kind] : "KIND_" + kind;
  }

  /** The names of the kinds in {@code mask}, for messages. */
  static String names(int mask) {
    StringBuilder b = new StringBuilder();
    for (int k = 1; k < NAMES.length; k++) {
      if ((mask & (1 << k)) != 0) {
        b.append(b.length() == 0 ? "" : ", ").append(NAMES[k]);
      }
    }
    return b.toString();
  }
}
