package dev.lease.jdbc.internal.sql;

import static dev.lease.jdbc.internal.sql.SqlKind.BEGIN;
import static dev.lease.jdbc.internal.sql.SqlKind.COMMIT;
import static dev.lease.jdbc.internal.sql.SqlKind.COMMIT_PREPARED;
import static dev.lease.jdbc.internal.sql.SqlKind.DELAYED_WRITE;
import static dev.lease.jdbc.internal.sql.SqlKind.IMPLICIT_COMMIT;
import static dev.lease.jdbc.internal.sql.SqlKind.NON_TRANSACTIONAL;
import static dev.lease.jdbc.internal.sql.SqlKind.OTHER;
import static dev.lease.jdbc.internal.sql.SqlKind.PREPARE_TRANSACTION;
import static dev.lease.jdbc.internal.sql.SqlKind.RELEASE;
import static dev.lease.jdbc.internal.sql.SqlKind.ROLLBACK;
import static dev.lease.jdbc.internal.sql.SqlKind.ROLLBACK_PREPARED;
import static dev.lease.jdbc.internal.sql.SqlKind.ROLLBACK_TO;
import static dev.lease.jdbc.internal.sql.SqlKind.ROUTINE;
import static dev.lease.jdbc.internal.sql.SqlKind.SAVEPOINT;
import static dev.lease.jdbc.internal.sql.SqlKind.SESSION;
import static dev.lease.jdbc.internal.sql.SqlKind.SET_AUTOCOMMIT;
import static dev.lease.jdbc.internal.sql.SqlKind.SET_TRANSACTION;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The SQL lexer on the literals, comments and keywords that decide where a text's statements are
 * and what they do, per dialect. The tests name the server behaviour they pin down; the attacks (a
 * COMMIT hidden from a naive reading) sit beside the healthy texts that must not be misread.
 */
public class SqlLexerTest {

  public static final SqlLexer PG = SqlLexer.of(SqlDialect.POSTGRESQL);
  static final SqlLexer MY = SqlLexer.of(SqlDialect.MYSQL);
  static final SqlLexer LITE = SqlLexer.of(SqlDialect.SQLITE);
  static final SqlLexer GEN = SqlLexer.of(SqlDialect.GENERIC);

  /** The kinds of the statements in the first reading, in order. */
  public static List<SqlKind> kinds(SqlLexer lexer, String sql) {
    return lexer.statements(sql).stream().map(SqlStatement::kind).collect(Collectors.toList());
  }

  public static List<String> texts(SqlLexer lexer, String sql) {
    List<String> out = new ArrayList<>();
    for (SqlStatement s : lexer.statements(sql)) {
      out.add(s.text(sql));
    }
    return out;
  }

  /** The kind of a one-statement text, checking that every reading agrees. */
  static SqlKind kind(SqlLexer lexer, String sql) {
    SqlSummary s = lexer.summarize(sql);
    assertEquals(1, s.count(), sql + ": " + s.describe());
    assertFalse(s.ambiguous(), sql);
    return s.single();
  }

  static boolean hidesNothing(SqlLexer lexer, String sql, SqlKind kind) {
    return lexer.summarize(sql).has(kind);
  }

  @Test
  void blankAndCommentOnlyTextsHoldNoStatement() {
    for (SqlLexer l : List.of(PG, MY, LITE, GEN)) {
      assertEquals(0, l.summarize("").count(), l.dialect.name());
      assertEquals(0, l.summarize("  ;; \n ;").count(), l.dialect.name());
      assertEquals(0, l.summarize("/* x */ -- y\n").count(), l.dialect.name());
      assertEquals(0, l.summarize(null).count(), l.dialect.name());
      assertEquals(1, l.summarize("SELECT 1;").count(), l.dialect.name());
      assertEquals(1, l.summarize("  SELECT 1 ;;  ").count(), l.dialect.name());
    }
  }

  @Test
  void spansCoverEachStatementWithoutSeparatorOrLeadingComment() {
    String sql = "/* app */ BEGIN ; UPDATE t SET a = 'x;y' ;\n-- done\nCOMMIT";
    assertEquals(List.of("BEGIN", "UPDATE t SET a = 'x;y'", "COMMIT"), texts(PG, sql));
    assertEquals(List.of(BEGIN, OTHER, COMMIT), kinds(PG, sql));
    SqlStatement update = PG.statements(sql).get(1);
    assertEquals(sql.indexOf("UPDATE"), update.start());
  }

  @Test
  void keywordsMatchInAsciiOnlyAndWholeWordsOnly() {
    assertEquals(OTHER, kind(PG, "COMMİT")); // Turkish dotted capital I is not an I to a server
    assertEquals(OTHER, kind(PG, "BEGINNING"));
    assertEquals(OTHER, kind(MY, "commit_log_insert()"));
    assertEquals(COMMIT, kind(MY, "commit"));
    assertEquals(COMMIT, kind(PG, "cOmMiT\tWORK"));
    // a control character the lexer cannot place still separates words: never glued to a keyword
    assertEquals(COMMIT, kind(PG, "COMMIT\u000Bwork"));
  }

  @Nested
  class TransactionControl {

    @Test
    void postgresql() {
      assertEquals(BEGIN, kind(PG, "BEGIN"));
      assertEquals(BEGIN, kind(PG, "begin isolation level serializable"));
      assertEquals(BEGIN, kind(PG, "START TRANSACTION READ ONLY"));
      assertEquals(OTHER, kind(PG, "START_TIME"));
      assertEquals(COMMIT, kind(PG, "COMMIT"));
      assertEquals(COMMIT, kind(PG, "END TRANSACTION"));
      assertEquals(ROLLBACK, kind(PG, "ROLLBACK"));
      assertEquals(ROLLBACK, kind(PG, "ABORT"));
      assertEquals(ROLLBACK_TO, kind(PG, "ROLLBACK TO SAVEPOINT a"));
      assertEquals(ROLLBACK_TO, kind(PG, "rollback work to a"));
      assertEquals(SAVEPOINT, kind(PG, "SAVEPOINT a"));
      assertEquals(RELEASE, kind(PG, "RELEASE SAVEPOINT a"));
      assertEquals(PREPARE_TRANSACTION, kind(PG, "PREPARE TRANSACTION 'tx1'"));
      assertEquals(OTHER, kind(PG, "PREPARE q (int) AS SELECT $1"));
      assertEquals(COMMIT_PREPARED, kind(PG, "COMMIT PREPARED 'tx1'"));
      assertEquals(ROLLBACK_PREPARED, kind(PG, "ROLLBACK PREPARED 'tx1'"));
      assertEquals(SET_TRANSACTION, kind(PG, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"));
      assertEquals(OTHER, kind(PG, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"));
      assertEquals(OTHER, kind(PG, "SET search_path = app"));
      assertTrue(PG.summarize("COMMIT AND CHAIN").chain());
      assertFalse(PG.summarize("COMMIT AND NO CHAIN").chain());
      assertTrue(PG.summarize("ROLLBACK AND CHAIN").has(BEGIN), "a chain begins");
      // PostgreSQL refuses COMMIT inside a procedure or DO block called in a transaction block
      assertEquals(OTHER, kind(PG, "CALL p()"));
      assertEquals(OTHER, kind(PG, "DO $$ BEGIN COMMIT; END $$"));
    }

    @Test
    void postgresqlStatementsThatCannotRunInATransactionBlock() {
      for (String sql :
          List.of(
              "VACUUM",
              "vacuum analyze t",
              "CLUSTER",
              "REINDEX TABLE t",
              "CREATE DATABASE d",
              "DROP DATABASE d",
              "ALTER DATABASE d SET TABLESPACE s",
              "CREATE TABLESPACE s LOCATION '/x'",
              "ALTER SYSTEM SET work_mem = '1MB'",
              "CREATE INDEX CONCURRENTLY i ON t (a)",
              "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS i ON t (a)",
              "DROP INDEX CONCURRENTLY i",
              "CREATE SUBSCRIPTION s CONNECTION 'x' PUBLICATION p")) {
        assertEquals(NON_TRANSACTIONAL, kind(PG, sql), sql);
      }
      assertEquals(SESSION, kind(PG, "DISCARD ALL")); // its effect stays in the session
      assertEquals(OTHER, kind(PG, "CREATE TABLE t (a int)"));
      assertEquals(OTHER, kind(PG, "TRUNCATE t")); // transactional in PostgreSQL
      assertEquals(OTHER, kind(PG, "LOCK TABLE t"));
    }

    @Test
    void mysqlAndMariadb() {
      assertEquals(BEGIN, kind(MY, "BEGIN"));
      assertEquals(BEGIN, kind(MY, "BEGIN WORK"));
      assertEquals(BEGIN, kind(MY, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"));
      assertEquals(ROUTINE, kind(MY, "BEGIN NOT ATOMIC SELECT 1"));
      assertEquals(COMMIT, kind(MY, "COMMIT WORK AND NO CHAIN NO RELEASE"));
      assertTrue(MY.summarize("COMMIT AND CHAIN").chain());
      assertEquals(ROLLBACK_TO, kind(MY, "ROLLBACK WORK TO SAVEPOINT s"));
      assertEquals(SET_AUTOCOMMIT, kind(MY, "SET autocommit = 0"));
      assertEquals(SET_AUTOCOMMIT, kind(MY, "set @@session.autocommit=ON"));
      assertEquals(SET_AUTOCOMMIT, kind(MY, "SET sql_mode = '', AUTOCOMMIT = 1"));
      assertEquals(SET_AUTOCOMMIT, kind(MY, "SET @@`autocommit` = 1"));
      assertEquals(SET_AUTOCOMMIT, kind(MY, "SET LOCAL autocommit = 1"));
      assertEquals(OTHER, kind(MY, "SET @autocommit_note = 'x'"));
      assertEquals(OTHER, kind(MY, "SET @x = 'autocommit'"));
      assertEquals(SET_TRANSACTION, kind(MY, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"));
      assertEquals(OTHER, kind(MY, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"));
      assertEquals(ROUTINE, kind(MY, "CALL p(1)"));
      assertEquals(ROUTINE, kind(MY, "EXECUTE stmt USING @a"));
      assertEquals(ROUTINE, kind(MY, "EXECUTE IMMEDIATE 'COMMIT'"));
      assertEquals(ROUTINE, kind(MY, "{call p(?)}"));
      assertEquals(ROUTINE, kind(MY, "{? = call f(?)}"));
      assertEquals(OTHER, kind(PG, "{call p(?)}"));
      assertEquals(BEGIN, kind(MY, "XA START 'x'"));
      assertEquals(PREPARE_TRANSACTION, kind(MY, "XA END 'x'"));
      assertEquals(PREPARE_TRANSACTION, kind(MY, "XA PREPARE 'x'"));
      assertEquals(COMMIT_PREPARED, kind(MY, "XA COMMIT 'x' ONE PHASE"));
      assertEquals(ROLLBACK_PREPARED, kind(MY, "XA ROLLBACK 'x'"));
      assertEquals(OTHER, kind(MY, "XA RECOVER"));
      // MariaDB's SET STATEMENT ... FOR runs the statement after FOR
      assertEquals(COMMIT, kind(MY, "SET STATEMENT max_statement_time = 1 FOR COMMIT"));
      assertEquals(OTHER, kind(MY, "SET STATEMENT max_statement_time = 1 FOR UPDATE t SET a = 1"));
      assertEquals(
          OTHER, kind(MY, "SET STATEMENT x = (SELECT 1 FOR UPDATE) FOR SELECT 1"), "FOR in parens");
    }

    @Test
    void mysqlImplicitCommits() {
      for (String sql :
          List.of(
              "CREATE TABLE t (a int)",
              "CREATE OR REPLACE VIEW v AS SELECT 1",
              "ALTER TABLE t ADD b int",
              "DROP TABLE t",
              "RENAME TABLE a TO b",
              "TRUNCATE TABLE t",
              "LOCK TABLES t WRITE",
              "UNLOCK TABLES",
              "GRANT SELECT ON t TO u",
              "REVOKE SELECT ON t FROM u",
              "SET PASSWORD = 'x'",
              "ANALYZE TABLE t",
              "OPTIMIZE TABLE t",
              "REPAIR TABLE t",
              "CHECK TABLE t",
              "FLUSH TABLES",
              "RESET MASTER",
              "START SLAVE",
              "START REPLICA",
              "STOP REPLICA",
              "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h'",
              "LOAD INDEX INTO CACHE t",
              "INSTALL PLUGIN p SONAME 'p.so'")) {
        assertEquals(IMPLICIT_COMMIT, kind(MY, sql), sql);
      }
      assertEquals(OTHER, kind(MY, "CREATE TEMPORARY TABLE t (a int)"));
      assertEquals(OTHER, kind(MY, "CREATE OR REPLACE TEMPORARY TABLE t (a int)"));
      assertEquals(OTHER, kind(MY, "DROP TEMPORARY TABLE IF EXISTS t"));
      // MariaDB commits at CREATE TEMPORARY SEQUENCE (review: the share lock was gone)
      assertEquals(IMPLICIT_COMMIT, kind(MY, "CREATE TEMPORARY SEQUENCE s"));
      assertEquals(IMPLICIT_COMMIT, kind(MY, "create or replace temporary sequence s start 5"));
      assertEquals(OTHER, kind(MY, "LOAD DATA INFILE 'f' INTO TABLE t"));
      assertEquals(OTHER, kind(MY, "SELECT 1 FROM t LOCK IN SHARE MODE"));
      assertEquals(DELAYED_WRITE, kind(MY, "INSERT DELAYED INTO t VALUES (1)"));
      assertEquals(DELAYED_WRITE, kind(MY, "replace /*!delayed*/ into t values (1)"));
      assertEquals(OTHER, kind(MY, "INSERT LOW_PRIORITY INTO t VALUES (1)"));
    }

    @Test
    void sqlite() {
      assertEquals(BEGIN, kind(LITE, "BEGIN IMMEDIATE TRANSACTION"));
      assertEquals(COMMIT, kind(LITE, "END"));
      assertEquals(ROLLBACK_TO, kind(LITE, "ROLLBACK TRANSACTION TO SAVEPOINT s"));
      assertEquals(SAVEPOINT, kind(LITE, "SAVEPOINT s"));
      assertEquals(RELEASE, kind(LITE, "RELEASE s"));
      assertEquals(NON_TRANSACTIONAL, kind(LITE, "VACUUM"));
      assertEquals(SESSION, kind(LITE, "ATTACH DATABASE 'x.db' AS x"));
      assertEquals(SESSION, kind(LITE, "PRAGMA foreign_keys = ON"));
      assertEquals(SESSION, kind(LITE, "PRAGMA table_info(t)"));
      // the header values an application keeps its data in: written inside the transaction
      assertEquals(OTHER, kind(LITE, "PRAGMA user_version = 3"));
      assertEquals(OTHER, kind(LITE, "PRAGMA main.application_id = 7"));
      assertEquals(OTHER, kind(LITE, "EXPLAIN COMMIT")); // EXPLAIN does not run the statement
      assertEquals(OTHER, kind(LITE, "CREATE TABLE t (a)"));
    }
  }

  @Nested
  class PostgresqlLiterals {

    @Test
    void standardStringsKeepBackslashesButAnotherSettingReadsThemAsEscapes() {
      // standard_conforming_strings on: '\' is a whole string, so COMMIT runs
      String sql = "SELECT '\\'; COMMIT; -- '";
      assertEquals(List.of(OTHER, COMMIT), kinds(PG, sql));
      // ... and with it off, it is one SELECT; the union keeps the COMMIT either way
      assertTrue(hidesNothing(PG, sql, COMMIT));
      // the other way round: one string under the first reading, a COMMIT under the other
      String escaped = "SELECT 'it\\'s; COMMIT; --'";
      assertEquals(List.of(OTHER, COMMIT), kinds(PG, escaped));
      assertTrue(hidesNothing(PG, "SELECT 'x\\'; COMMIT; --'", COMMIT));
    }

    @Test
    void escapeStringsFollowPgjdbc() {
      // E'...': backslash escapes the quote, so this is one statement for pgjdbc
      assertEquals(List.of(OTHER), kinds(PG, "SELECT E'\\'; COMMIT; --'"));
      // yet the server reads E' at the start of a text differently from pgjdbc: union
      assertTrue(hidesNothing(PG, "SELECT E'\\'; COMMIT; --'", COMMIT));
      // E glued to a word is not a prefix (pgjdbc's charTerminatesIdentifier)
      assertEquals(List.of(OTHER, COMMIT), kinds(PG, "SELECT xE'\\'; COMMIT; --'"));
      assertEquals(1, PG.summarize("SELECT E'a''b', 'c''d' FROM t").count(), "doubled quotes");
    }

    @Test
    void dollarQuotesHideTheirContent() {
      assertEquals(List.of(OTHER), kinds(PG, "SELECT $$; COMMIT; $$"));
      assertEquals(List.of(OTHER), kinds(PG, "SELECT $tag$ $$; COMMIT; $$ $tag$"));
      assertEquals(List.of(OTHER), kinds(PG, "DO $body$BEGIN UPDATE t SET a = 1; END$body$"));
      assertEquals(1, PG.summarize("SELECT $tag$ $$; COMMIT; $$ $tag$").count());
      // not a dollar quote: a parameter, part of an identifier
      assertEquals(List.of(OTHER, COMMIT), kinds(PG, "SELECT $1; COMMIT"));
      assertEquals(
          List.of(OTHER, COMMIT, OTHER), kinds(PG, "SELECT a$b$ FROM t; COMMIT; SELECT $b$"));
      // unterminated: the rest of the text is the string
      assertEquals(List.of(OTHER), kinds(PG, "SELECT $x$ ; COMMIT"));
    }

    @Test
    void dollarQuotesWherePgjdbcAndTheServerDisagreeAreReadBothWays() {
      // U+00D7 is not a Java identifier character (pgjdbc: a quote may open after it) but is an
      // identifier byte to the server (it may not)
      String sql = "SELECT \u00d7$$; COMMIT; $$";
      assertTrue(hidesNothing(PG, sql, COMMIT));
    }

    @Test
    void quotedIdentifiersAndNestedComments() {
      assertEquals(List.of(OTHER), kinds(PG, "SELECT \"a;\"\"COMMIT\" FROM t"));
      assertEquals(OTHER, kind(PG, "\"COMMIT\"")); // an identifier, not the keyword
      assertEquals(List.of(OTHER), kinds(PG, "SELECT 1 /* a /* nested; */ COMMIT; */"));
      assertEquals(List.of(COMMIT), kinds(PG, "/* one */ /* two /* three */ */ COMMIT"));
      assertEquals(List.of(OTHER), kinds(PG, "SELECT 1 -- ; COMMIT"));
      assertEquals(List.of(OTHER, COMMIT), kinds(PG, "SELECT 1 --\r; COMMIT"), "\\r ends it");
    }

    @Test
    void aCommentOpenedBySlashStarSlashIsReadAsPgjdbcAndAsTheServerReadIt() {
      // pgjdbc: "/*/" is a whole comment, so "; COMMIT;" is split and runs
      String sql = "SELECT 1 /*/ ; COMMIT; */";
      assertEquals(List.of(OTHER, COMMIT, OTHER), kinds(PG, sql));
      // the server reads one comment up to "*/": both readings are in the summary
      assertTrue(hidesNothing(PG, sql, COMMIT));
    }
  }

  @Nested
  class MysqlLiterals {

    @Test
    void backslashEscapesAndNoBackslashEscapesAreBothRead() {
      String sql = "SELECT '\\'; COMMIT; -- '";
      assertEquals(List.of(OTHER), kinds(MY, sql), "default sql_mode: one string");
      assertTrue(hidesNothing(MY, sql, COMMIT), "NO_BACKSLASH_ESCAPES: COMMIT runs");
      assertTrue(hidesNothing(MY, "SELECT \"\\\"; COMMIT; -- \"", COMMIT), "ANSI_QUOTES too");
      assertEquals(1, MY.summarize("SELECT 'it''s', \"a\"\"b\" FROM t").count());
    }

    @Test
    void hashAndDashDashCommentsFollowSqlLex() {
      assertEquals(List.of(OTHER), kinds(MY, "SELECT 1 # ; COMMIT"));
      assertEquals(List.of(OTHER), kinds(MY, "SELECT 1 -- ; COMMIT"));
      // "--" needs white space or a control character after it; otherwise it is minus minus
      assertEquals(List.of(OTHER, COMMIT), kinds(MY, "SELECT 1--1; COMMIT"));
      assertEquals(List.of(OTHER, COMMIT), kinds(MY, "SELECT 1 --\n; COMMIT"));
      // MySQL's line comments end at '\n' only: after a lone '\r' the comment goes on
      // (ending it at the '\r' would open a string at the quote and hide the COMMIT)
      assertEquals(List.of(OTHER, COMMIT), kinds(MY, "SELECT 1 # x\r'\n; COMMIT; -- '"));
      assertEquals(List.of(OTHER), kinds(MY, "SELECT 1 # x\r; COMMIT"));
    }

    @Test
    void backticksAndBlockCommentsDoNotNest() {
      assertEquals(List.of(OTHER), kinds(MY, "SELECT `a;``COMMIT` FROM t"));
      assertEquals(List.of(OTHER, COMMIT, OTHER), kinds(MY, "SELECT 1 /* /* */ ; COMMIT; */"));
      assertEquals(List.of(OTHER), kinds(MY, "SELECT 1 /*/ ; COMMIT; */"), "'/*/' is open");
    }

    @Test
    void executableCommentsRunTheirContent() {
      assertEquals(COMMIT, kind(MY, "/*!COMMIT*/"));
      assertEquals(List.of(OTHER, COMMIT), kinds(MY, "SELECT 1 /*!; COMMIT */"));
      assertEquals(List.of(OTHER, COMMIT), kinds(MY, "SELECT 1; /*!50700 COMMIT */"));
      assertEquals(List.of(OTHER, COMMIT), kinds(MY, "SELECT 1; /*M!100100 COMMIT */"));
      assertEquals(
          List.of(OTHER, COMMIT), kinds(MY, "SELECT 1; /*M! COMMIT */"), "MariaDB runs it");
      assertEquals(SET_AUTOCOMMIT, kind(MY, "/*!40101 SET autocommit = 0 */"));
      assertEquals(List.of(OTHER), kinds(MY, "SELECT /*! 1 /* c */ */ FROM t"));
    }

    @Test
    void skippedVersionedCommentsAreReadAsCommentsToo() {
      // a server older than 9.99.99 skips the comment, and then the quote inside is no string
      String sql = "SELECT 1 /*!99999 ' */; COMMIT; -- '";
      assertEquals(List.of(OTHER), kinds(MY, sql), "run: the quote opens a string");
      assertTrue(hidesNothing(MY, sql, COMMIT), "skipped: COMMIT runs");
      // MySQL ignores /*M! comments: the same
      assertTrue(hidesNothing(MY, "SELECT 1 /*M! ' */; COMMIT; -- '", COMMIT));
    }

    @Test
    void versionedCommentsWithDifferentVersionsAreAmbiguous() {
      SqlSummary s = MY.summarize("SELECT 1 /*!50700 a */ /*!80000 b */");
      assertTrue(s.ambiguous());
      assertFalse(MY.summarize("SELECT /*!50700 a */ 1 /*!50700 b */").ambiguous());
      assertTrue(MY.summarize("SELECT 1 /*!99999 /* x */ */").ambiguous());
    }

    @Test
    void optimizerHintsSkipQuotes() {
      // MySQL's hint scanner reads the quoted '*/' as a string: the hint ends at the second "*/"
      String sql = "SELECT /*+ SET_VAR(x = '*/') */ 1; COMMIT";
      assertTrue(hidesNothing(MY, sql, COMMIT));
      String hidden = "SELECT /*+ ' */ 1; COMMIT; -- ' */";
      assertTrue(hidesNothing(MY, hidden, COMMIT), "plain-comment reading");
      // a /*+ comment elsewhere is a plain comment
      assertEquals(List.of(OTHER, COMMIT), kinds(MY, "SELECT 1 /*+ x */; COMMIT"));
    }

    @Test
    void dollarQuotesOfMySql92AreReadBothWays() {
      // MySQL 9.2+ reads $$ ... $$ as a string; earlier servers and MariaDB do not
      assertTrue(hidesNothing(MY, "SELECT $$ ' $$; COMMIT; -- '", COMMIT));
      assertEquals(List.of(OTHER, COMMIT), kinds(MY, "SELECT $a; COMMIT"));
    }

    @Test
    void compoundStatementsAreSplitAtEverySemicolonSoTheyAreNeverUnderestimated() {
      String sql = "CREATE PROCEDURE p() BEGIN UPDATE t SET a = 1; COMMIT; END";
      SqlSummary s = MY.summarize(sql);
      assertTrue(s.count() > 1);
      assertTrue(s.has(COMMIT));
    }
  }

  @Nested
  class SqliteLiterals {

    @Test
    void identifiersStringsAndComments() {
      assertEquals(List.of(OTHER), kinds(LITE, "SELECT [a;COMMIT], `b;`, \"c;\" FROM t"));
      assertEquals(List.of(OTHER), kinds(LITE, "SELECT 'a;''COMMIT'"));
      assertEquals(List.of(OTHER, COMMIT), kinds(LITE, "SELECT '\\'; COMMIT; -- '"));
      assertEquals(List.of(OTHER), kinds(LITE, "SELECT 1 /* ; COMMIT"), "unterminated comment");
      assertEquals(
          List.of(OTHER, COMMIT, OTHER), kinds(LITE, "SELECT 1 /* /* */ ; COMMIT; */"), "no nest");
      assertEquals(List.of(OTHER), kinds(LITE, "SELECT 1 # x"));
    }

    @Test
    void triggerBodiesAreOneStatement() {
      String sql =
          "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE u SET n = n + 1;"
              + " SELECT CASE WHEN 1 THEN 2 END; END; COMMIT";
      assertEquals(List.of(OTHER, COMMIT), kinds(LITE, sql));
      assertEquals(
          List.of(OTHER),
          kinds(
              LITE, "CREATE TEMP TRIGGER IF NOT EXISTS tr BEFORE DELETE ON t BEGIN SELECT 1; END"));
    }
  }

  @Test
  void theSummaryCountsAndUnitesAcrossBatches() {
    SqlSummary a = PG.summarize("UPDATE t SET a = 1");
    SqlSummary b = PG.summarize("COMMIT");
    SqlSummary batch = SqlSummary.union(a, b, true);
    assertEquals(2, batch.count());
    assertTrue(batch.hasControl());
    assertFalse(a.hasControl());
    assertEquals(OTHER, a.single());
    assertEquals("2 statements [OTHER, COMMIT]", batch.describe());
  }
}
