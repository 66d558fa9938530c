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
