package dev.lease.jdbc.internal.fence;

import static dev.lease.jdbc.internal.sql.SqlLexerTest.PG;
import static dev.lease.jdbc.internal.sql.SqlLexerTest.kinds;
import static dev.lease.jdbc.internal.sql.SqlLexerTest.texts;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.internal.sql.SqlKind;
import dev.lease.jdbc.internal.sql.SqlSummary;
import dev.lease.testing.OnPostgresql;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 25 item 9: PostgreSQL's SQL-standard function bodies ({@code CREATE FUNCTION ... BEGIN
 * ATOMIC ...; END}, common in migrations) are one statement, as the server reads them, not a text
 * mixing an {@code END} (a COMMIT) with other statements (LF005). The controls: a statement after
 * the body is still found, and a body that never closes is ambiguous, so nothing is hidden.
 */
class SqlStandardBodyTest {

  static final String BODY =
      "CREATE OR REPLACE FUNCTION f(a int) RETURNS int LANGUAGE sql\n"
          + "BEGIN ATOMIC\n"
          + "  INSERT INTO t VALUES (a);\n"
          + "  SELECT CASE WHEN a > 0 THEN a ELSE (CASE a WHEN 0 THEN 0 END) END;\n"
          + "END";

  @Test
  void aBeginAtomicBodyIsOneStatement() {
    assertEquals(List.of(BODY), texts(PG, BODY));
    assertEquals(List.of(BODY), texts(PG, BODY + ";"));
    assertEquals(List.of(SqlKind.OTHER), kinds(PG, BODY));
    SqlSummary s = PG.summarize(BODY);
    assertEquals(1, s.count());
    assertTrue(!s.ambiguous());
    String procedure = "create procedure p() language sql begin atomic; update t set a = 1; end";
    assertEquals(List.of(procedure), texts(PG, procedure));
  }

  /** Control: what follows the body is read as before, a COMMIT hidden after it included. */
  @Test
  void statementsAfterTheBodyAreStillFound() {
    assertEquals(
        List.of(SqlKind.OTHER, SqlKind.COMMIT, SqlKind.OTHER),
        kinds(PG, BODY + "; COMMIT; SELECT 1"));
    assertEquals(
        List.of(SqlKind.OTHER, SqlKind.COMMIT), kinds(PG, BODY.replace("END", "end") + ";end"));
    // BEGIN ATOMIC outside a CREATE is no body: BEGIN, then the rest
    assertEquals(SqlKind.BEGIN, kinds(PG, "BEGIN ATOMIC; SELECT 1; END").get(0));
    assertEquals(3, kinds(PG, "BEGIN ATOMIC; SELECT 1; END").size());
  }

  /** Control: a body that never closes does not swallow what follows; the text is refused. */
  @Test
  void aBodyThatNeverClosesIsAmbiguous() {
    SqlSummary s =
        PG.summarize("CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; COMMIT");
    assertTrue(s.ambiguous());
    // a CASE left open keeps the body open: still refused, never a hidden COMMIT let through
    SqlSummary c =
        PG.summarize(
            "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT CASE; END; COMMIT");
    assertTrue(c.ambiguous());
  }

  @OnPostgresql
  void aSqlStandardFunctionIsCreatedUnderALease(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      String fn = TestDatabase.uniqueTable("fn");
      Lease lease = f.holding("ddl");
      try (Connection c = f.fenced(f.options().build()).getConnection();
          Statement s = c.createStatement();
          LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        s.execute(
            "CREATE FUNCTION "
                + fn
                + "(a int) RETURNS int LANGUAGE sql BEGIN ATOMIC"
                + " INSERT INTO "
                + f.data
                + " (id, term) VALUES (a, 0); SELECT CASE WHEN a > 0 THEN a END; END");
        try (ResultSet rs = s.executeQuery("SELECT " + fn + "(7)")) {
          rs.next();
          assertEquals(7, rs.getInt(1));
        }
        assertEquals(1, f.count("id = 7"));
        // control: a COMMIT after the body is refused before anything is sent
        LeaseLostSQLException e =
            assertThrows(
                LeaseLostSQLException.class,
                () ->
                    s.execute(
                        "CREATE OR REPLACE FUNCTION "
                            + fn
                            + "(a int) RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT a; END;"
                            + " COMMIT"));
        assertEquals(LeaseLostSQLException.TRANSACTION_CONTROL_MIXED, e.getSQLState());
        s.execute("DROP FUNCTION " + fn + "(int)");
      }
    }
  }
}
