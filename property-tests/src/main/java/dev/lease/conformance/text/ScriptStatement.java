package dev.lease.conformance.text;

/**
 * One statement of a generated script: what it does (the grammar's view, for the properties'
 * bookkeeping, never the fence's) and its text as sent, decorated.
 */
public record ScriptStatement(Kind kind, String sql) {

  /** The grammar's statements. */
  public enum Kind {
    /** BEGIN, START TRANSACTION, and their spellings. */
    BEGIN,
    /** COMMIT, END, and COMMIT hidden in a MySQL executable comment. */
    COMMIT,
    ROLLBACK,
    SAVEPOINT,
    RELEASE,
    ROLLBACK_TO,
    /** MySQL/MariaDB SET autocommit = 0 (opens a transaction's mode). */
    AUTOCOMMIT_OFF,
    /** MySQL/MariaDB SET autocommit = 1 (commits). */
    AUTOCOMMIT_ON,
    SET_TRANSACTION,
    /** An UPDATE or INSERT of the counter table: the writes the properties watch. */
    WRITE,
    SELECT,
    /** A session setting (not autocommit). */
    SET,
    /** MySQL/MariaDB DDL that commits around itself. */
    IMPLICIT_COMMIT
  }

  public boolean writes() {
    return kind == Kind.WRITE;
  }

  @Override
  public String toString() {
    return sql;
  }
}
