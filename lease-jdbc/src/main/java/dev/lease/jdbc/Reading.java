package dev.lease.jdbc;

import dev.lease.jdbc.internal.sql.SqlKind;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlStatement;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.util.EnumSet;
import java.util.List;

/**
 * How the fence reads a statement's text under a lease, as a strategy: {@link #EVERY_STATEMENT}, in
 * production. The weaker readings are negative controls, plugged in beside it to show what they let
 * through; {@link FencingOptions} is the one place a {@link Weakening} chooses one.
 */
abstract class Reading {

  /** Every statement of the text, by the dialect's lexer, under every reading of its settings. */
  static final Reading EVERY_STATEMENT =
      new Reading("every statement") {
        @Override
        SqlSummary read(SqlSummary summary, String text, SqlLexer lexer) {
          return summary;
        }
      };

  /**
   * The first release's reading ({@link Weakening#LEADING_KEYWORD}): the first statement's kind.
   */
  static final Reading LEADING_KEYWORD =
      new Reading("leading keyword") {
        @Override
        SqlSummary read(SqlSummary summary, String text, SqlLexer lexer) {
          List<SqlStatement> all = text == null ? List.of() : lexer.statements(text);
          return SqlSummary.one(all.isEmpty() ? SqlKind.OTHER : all.get(0).kind());
        }
      };

  /**
   * MySQL/MariaDB implicit commits read as ordinary statements ({@link
   * Weakening#UNKNOWN_IMPLICIT_COMMITS}), as for a statement the lexer does not know commits.
   */
  static final Reading UNKNOWN_IMPLICIT_COMMITS =
      new Reading("implicit commits unknown") {
        @Override
        SqlSummary read(SqlSummary s, String text, SqlLexer lexer) {
          if (!s.has(SqlKind.IMPLICIT_COMMIT)) {
            return s;
          }
          EnumSet<SqlKind> kinds = EnumSet.copyOf(s.kinds());
          kinds.remove(SqlKind.IMPLICIT_COMMIT);
          kinds.add(SqlKind.OTHER);
          SqlKind single = s.single() == SqlKind.IMPLICIT_COMMIT ? SqlKind.OTHER : s.single();
          return SqlSummary.of(kinds, s.count(), single, s.ambiguous(), s.chain());
        }
      };

  private final String name;

  private Reading(String name) {
    this.name = name;
  }

  /**
   * What the fence takes {@code text} to hold, given the lexer's {@code summary} of every statement
   * in it.
   */
  abstract SqlSummary read(SqlSummary summary, String text, SqlLexer lexer);

  @Override
  public String toString() {
    return name;
  }
}
