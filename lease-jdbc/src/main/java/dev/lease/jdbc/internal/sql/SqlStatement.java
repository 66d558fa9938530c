package dev.lease.jdbc.internal.sql;

/**
 * One statement of a SQL text, as {@link SqlLexer#statements} found it: its {@link SqlKind kind}
 * and its span, from its first token to the end of its last (without the separating semicolon,
 * leading comments or trailing white space).
 *
 * @param kind what the statement does
 * @param start offset of the statement's first token in the text
 * @param end offset just past its last token
 * @param chain true for COMMIT/ROLLBACK ... AND CHAIN (a new transaction begins as this one ends)
 */
public record SqlStatement(SqlKind kind, int start, int end, boolean chain) {

  /** The statement's text in {@code sql}, the text it was found in. */
  public String text(String sql) {
    return sql.substring(start, end);
  }

  @Override
  public String toString() {
    return kind.name() + "[" + start + ", " + end + ")" + (chain ? " chain" : "");
  }
}
