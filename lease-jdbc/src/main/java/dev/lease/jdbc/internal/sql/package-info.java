/**
 * Internal (not exported, no compatibility promise): SQL text read per dialect as the server will
 * read it. {@link dev.lease.jdbc.internal.sql.SqlLexer} is the entry: every statement of a text
 * with its kind and span ({@link dev.lease.jdbc.internal.sql.SqlStatement}), or a summary of the
 * kinds ({@link dev.lease.jdbc.internal.sql.SqlSummary}), taken as the union over every reading the
 * server's settings allow (backslash escapes on or off, MySQL's {@code ANSI_QUOTES}, ...). The one
 * scanning pass is {@code SqlScan}; each dialect's characters and first-keyword tables, where a
 * statement's kind ({@link dev.lease.jdbc.internal.sql.SqlKind}) is decided, are {@code SqlSyntax}.
 * Used by lease-jdbc's fence (which statements open, commit or end a transaction; whether the
 * verify can ride along with a text) and by the lexer benchmark.
 */
package dev.lease.jdbc.internal.sql;
