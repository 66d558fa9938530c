package dev.lease.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The leading-keyword scan that sees transaction control written as SQL (checklist 11). */
class SqlKindTest {

  @Test
  void transactionControlIsRecognisedPastSpaceCommentsAndCase() {
    assertEquals(SqlKind.BEGIN, SqlKind.of("BEGIN"));
    assertEquals(SqlKind.BEGIN, SqlKind.of("  begin transaction"));
    assertEquals(SqlKind.BEGIN, SqlKind.of("/* app */ START  TRANSACTION READ ONLY"));
    assertEquals(SqlKind.COMMIT, SqlKind.of("-- done\ncommit"));
    assertEquals(SqlKind.COMMIT, SqlKind.of("END"));
    assertEquals(SqlKind.COMMIT, SqlKind.of("COMMIT AND CHAIN"));
    assertEquals(SqlKind.ROLLBACK, SqlKind.of("ROLLBACK"));
    assertEquals(SqlKind.ROLLBACK, SqlKind.of("rollback work"));
    assertEquals(SqlKind.ROLLBACK, SqlKind.of("ABORT"));
    assertEquals(SqlKind.DDL, SqlKind.of("create table t (x int)"));
    assertEquals(SqlKind.DDL, SqlKind.of("ALTER TABLE t ADD y int"));
    assertEquals(SqlKind.DDL, SqlKind.of("DROP TABLE t"));
    assertEquals(SqlKind.DDL, SqlKind.of("TRUNCATE t"));
    assertEquals(SqlKind.DDL, SqlKind.of("RENAME TABLE a TO b"));
  }

  @Test
  void statementsThatCommitImplicitlyOnMySqlEndTheVerifiedTransaction() {
    // MySQL manual, "Statements That Cause an Implicit Commit"
    assertEquals(SqlKind.DDL, SqlKind.of("LOCK TABLES t WRITE"));
    assertEquals(SqlKind.DDL, SqlKind.of("unlock tables"));
    assertEquals(SqlKind.DDL, SqlKind.of("SET autocommit = 1"));
    assertEquals(SqlKind.DDL, SqlKind.of("set  AUTOCOMMIT=0"));
    assertEquals(SqlKind.DDL, SqlKind.of("GRANT SELECT ON t TO u"));
    assertEquals(SqlKind.DDL, SqlKind.of("REVOKE SELECT ON t FROM u"));
    assertEquals(SqlKind.DDL, SqlKind.of("ANALYZE TABLE t"));
    assertEquals(SqlKind.DDL, SqlKind.of("OPTIMIZE TABLE t"));
    assertEquals(SqlKind.DDL, SqlKind.of("REPAIR TABLE t"));
    assertEquals(SqlKind.DDL, SqlKind.of("FLUSH TABLES"));
    assertEquals(SqlKind.COMMIT, SqlKind.of("PREPARE TRANSACTION 'tx1'"));
    assertEquals(SqlKind.OTHER, SqlKind.of("PREPARE stmt FROM 'SELECT 1'"));
    assertEquals(SqlKind.OTHER, SqlKind.of("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"));
    assertEquals(SqlKind.OTHER, SqlKind.of("SET time_zone = '+00:00'"));
    assertEquals(SqlKind.OTHER, SqlKind.of("UPDATE t SET x = 1"));
    assertEquals(SqlKind.OTHER, SqlKind.of("LOCKED"));
  }

  @Test
  void savepointsAndOrdinaryStatementsStayInTheTransaction() {
    assertEquals(SqlKind.OTHER, SqlKind.of("ROLLBACK TO SAVEPOINT a"));
    assertEquals(SqlKind.OTHER, SqlKind.of("ROLLBACK TO a"));
    assertEquals(SqlKind.OTHER, SqlKind.of("ROLLBACK WORK TO SAVEPOINT a"));
    assertEquals(SqlKind.OTHER, SqlKind.of("SAVEPOINT a"));
    assertEquals(SqlKind.OTHER, SqlKind.of("RELEASE SAVEPOINT a"));
    assertEquals(SqlKind.OTHER, SqlKind.of("SELECT 'COMMIT'"));
    assertEquals(SqlKind.OTHER, SqlKind.of("UPDATE t SET begin = 1"));
    assertEquals(SqlKind.OTHER, SqlKind.of("BEGINNING"));
    assertEquals(SqlKind.OTHER, SqlKind.of("ENDPOINT"));
    assertEquals(SqlKind.OTHER, SqlKind.of("START SLAVE"));
    assertEquals(SqlKind.OTHER, SqlKind.of(""));
    assertEquals(SqlKind.OTHER, SqlKind.of("/* unterminated"));
    assertEquals(SqlKind.OTHER, SqlKind.of(null));
  }
}
