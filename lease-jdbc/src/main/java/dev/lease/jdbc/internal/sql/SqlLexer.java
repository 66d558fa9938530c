package dev.lease.jdbc.internal.sql;

import java.util.ArrayList;
import java.util.List;

/**
 * Reads SQL text per {@link SqlDialect}: finds every statement of a text (where literals, quoted
 * identifiers, comments and dollar quotes begin and end, and where the semicolons between
 * statements are), and classifies each by its leading keywords ({@link SqlKind}). One linear pass
 * per reading of the text; stateless and thread-safe.
 *
 * <p>One scanning loop serves every dialect (as pgjdbc's {@code Parser} is one loop over token
 * helpers): a dialect's {@link SqlSyntax} says where its rules differ (which comments, quotes and
 * dollar quotes it has, how a backslash reads), and a table from the first keyword to a rule gives
 * the statement's kind. The tables are in {@link SqlSyntax}, one per dialect, readable as text; the
 * pass is {@link SqlScan}.
 *
 * <h2>Every reading, not one</h2>
 *
 * <p>A text's statements are whatever the server (or, for pgjdbc, the driver, which splits the text
 * itself) makes of it, and that depends on settings the lexer cannot see: {@code
 * standard_conforming_strings}, MySQL's {@code NO_BACKSLASH_ESCAPES} and {@code ANSI_QUOTES}, the
 * server's version (MySQL runs {@code /*!50700 ... *}{@code /} only from 5.7, MariaDB runs {@code
 * /*M! ... *}{@code /} and MySQL skips it), optimizer hints (MySQL honours quotes inside {@code /*+
 * ... *}{@code /} after SELECT, INSERT, REPLACE, UPDATE and DELETE; MariaDB before 12 reads a plain
 * comment), dollar quotes (MySQL 9.2+ for JavaScript routines; pgjdbc and PostgreSQL differ on
 * non-ASCII characters around a {@code $}) and pgjdbc's and PostgreSQL's readings of a comment
 * opened by {@code /*}{@code /}. A text such as {@code SELECT '\'; COMMIT; -- '} is one statement
 * under one setting and a COMMIT under another. So the first pass notes which of these features the
 * text uses, and the text is lexed again under every combination of the other readings of the
 * features it uses; {@link #summarize} returns the union (a kind any reading finds is in the mask,
 * the largest statement count wins). A text that uses none of them, which is nearly every text, is
 * lexed once. Where no union settles it (MySQL versioned comments with different versions, a
 * skipped versioned comment with a nested {@code /*}), the summary is {@link SqlSummary#ambiguous}
 * and the fence refuses the text under a lease.
 *
 * <h2>What it deliberately does not parse</h2>
 *
 * <p>Compound statements whose bodies hold semicolons the server does not split at: MySQL's {@code
 * CREATE PROCEDURE ... BEGIN ...; END}, MariaDB's {@code BEGIN NOT ATOMIC ... END}. The lexer
 * splits them at every semicolon, which finds more statements (and kinds: the {@code END} reads as
 * a COMMIT) than the server runs, never fewer: such a text is refused under a lease, never let
 * through. Two bodies are read as their servers read them, since their commands are not executed
 * when the statement runs: SQLite's {@code CREATE TRIGGER ... BEGIN ...; END} (a trigger command
 * list ends at an {@code END} right after a semicolon), and PostgreSQL's SQL-standard function
 * bodies, {@code CREATE ... BEGIN ATOMIC ...; END} (issue 25 item 9; common in migrations). In
 * PostgreSQL's grammar such a body holds plain statements, no nested blocks, and {@code CASE} and
 * {@code END} are reserved words, so the body ends at the {@code END} that closes every {@code
 * CASE} opened in it; pgjdbc (42.7) stops splitting at semicolons once it saw {@code BEGIN ATOMIC}
 * in a CREATE and sends the rest as one query, which the server then splits by that same grammar
 * (or refuses, with the extended protocol, if more statements follow). A body still open at the end
 * of the text with a semicolon in it makes the text {@link SqlSummary#ambiguous}.
 */
public final class SqlLexer {

  public final SqlDialect dialect;
  final SqlSyntax syntax;

  private SqlLexer(SqlDialect dialect, SqlSyntax syntax) {
    this.dialect = dialect;
    this.syntax = syntax;
  }

  public static SqlLexer of(SqlDialect dialect) {
    return Lexers.ALL[dialect.ordinal()];
  }

  /** One lexer per dialect, made once the syntax tables exist. */
  private static final class Lexers {
    static final SqlLexer[] ALL = new SqlLexer[SqlDialect.values().length];

    static {
      for (SqlDialect d : SqlDialect.values()) {
        ALL[d.ordinal()] = new SqlLexer(d, SqlSyntax.of(d));
      }
    }
  }

  /**
   * The union over every reading of {@code sql} (see the class comment) of its statements' kinds
   * and count, as a {@link SqlSummary}. A null or blank text has no statement.
   */
  public SqlSummary summarize(String sql) {
    if (sql == null) {
      return SqlSummary.EMPTY;
    }
    SqlSummary known = summaries.get(sql);
    if (known != null) {
      return known;
    }
    SqlSummary summary = lex(sql);
    summaries.put(sql, summary);
    return summary;
  }

  /** Summaries of texts read before (a statement prepared again from the same text): issue 36. */
  private final SummaryCache summaries = new SummaryCache(SummaryCache.SLOTS, true);

  /** {@link #summarize} without the cache: every reading of the text, lexed now. */
  SqlSummary lex(String sql) {
    SqlScan scan = SqlScan.reuse(syntax, sql);
    try {
      return summarize(scan);
    } finally {
      scan.release();
    }
  }

  private static SqlSummary summarize(SqlScan scan) {
    SqlSummary summary = scan.run(0);
    int explored = 0;
    int seen = scan.seen;
    while (seen != explored) {
      explored = seen;
      // every non-empty combination of the alternatives the text exercises (at most 2^7 - 1)
      for (int alt = explored; alt != 0; alt = (alt - 1) & explored) {
        summary = SqlSummary.union(summary, scan.run(alt), false);
        seen |= scan.seen;
      }
    }
    return scan.ambiguous ? summary.asAmbiguous() : summary;
  }

  /**
   * Every statement of {@code sql} with its kind and span, in the first reading (see the class
   * comment; {@link #summarize} says whether other readings exist and what they add).
   */
  public List<SqlStatement> statements(String sql) {
    List<SqlStatement> out = new ArrayList<>();
    if (sql != null) {
      new SqlScan(syntax, sql, out).run(0);
    }
    return out;
  }
}
