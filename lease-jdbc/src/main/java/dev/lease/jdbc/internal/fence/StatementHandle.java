package dev.lease.jdbc.internal.fence;

import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * What the fence's rules know of a statement a JDBC face runs through them: the driver's statement,
 * its own text and what that text says, and (a prepared statement) how to run it combined with the
 * verify. {@link FencingStatement} implements it; the rules name no face (issue 39: the rules below
 * the faces).
 */
interface StatementHandle {

  /** The driver's statement. */
  Statement driverStatement();

  /** The statement's own text (a prepared statement's), or null. */
  String ownSql();

  /** What the statement runs, for {@link StatementSource#PREPARED} and {@code BATCH}. */
  SqlSummary summary(StatementSource source, SqlLexer lexer);

  /** From now on the statement's results are {@code results}'s (a combined statement's). */
  void resultsFrom(Statement results);

  /** A prepared statement whose parameters set so far can be set again on a combined text. */
  default boolean canReplay() {
    return false;
  }

  /**
   * A prepared statement: {@code verify} and this statement's text as one prepared statement, its
   * parameters shifted by {@code shift} and set again.
   */
  default PreparedStatement combined(String verify, int shift) throws SQLException {
    throw new IllegalStateException(this + " is not a prepared statement");
  }

  /** The text a call sends: {@code sql} of {@code execute(String)}, else the statement's own. */
  static String text(StatementHandle st, StatementSource source, String sql) {
    return source == StatementSource.TEXT ? sql : st == null ? null : st.ownSql();
  }
}
