package dev.lease.jdbc.internal.sql;

/**
 * What a dialect's classification rules ({@link SqlSyntax}) read of the statement being scanned:
 * its text, its first words (a window of them) and the flags the scan noted. {@link SqlScan}
 * implements it; the rules see no more of the scan (issue 39: the tables below the pass, no
 * circle).
 */
interface Words {

  /** The whole text being scanned. */
  String sql();

  /** Whether the statement starts with a word (not a parenthesis, a brace, a quote). */
  boolean firstIsWord();

  /** The statement's first character. */
  char firstChar();

  /** How many words the statement has (the window holds the first {@link #windowed}). */
  int words();

  /** How many of the statement's first words the window holds. */
  int windowed();

  /** Where word {@code w} of the window starts in {@link #sql}. */
  int wordStart(int w);

  /** Where word {@code w} of the window ends in {@link #sql}. */
  int wordEnd(int w);

  /** Word {@code w} is {@code keyword} (ASCII case-insensitive). */
  boolean isWord(int w, String keyword);

  /** Word {@code w} is {@code name}, or a name qualified by a schema ending in {@code .name}. */
  boolean isName(int w, String name);

  /** MariaDB {@code SET STATEMENT ... FOR}: the window holds the statement after FOR. */
  boolean inner();

  /** The statement names {@code autocommit} (a {@code SET} of it). */
  boolean autocommitNamed();

  /** PostgreSQL: the statement says {@code CONCURRENTLY}. */
  boolean concurrently();
}
