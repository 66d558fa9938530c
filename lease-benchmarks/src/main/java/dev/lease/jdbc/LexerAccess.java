package dev.lease.jdbc;

import java.util.Locale;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Benchmarks only: {@link SqlLexer}, package-private in lease-jdbc, for {@code LexerBenchmark}. In
 * the benchmarks' jar only, beside lease-jdbc's package.
 */
public final class LexerAccess {

  private final SqlLexer lexer;

  private LexerAccess(SqlLexer lexer) {
    this.lexer = lexer;
  }

  /** The lexer of a dialect by name: postgresql, mysql, sqlite or generic. */
  public static LexerAccess of(String dialect) {
    return new LexerAccess(SqlLexer.of(SqlDialect.valueOf(dialect.toUpperCase(Locale.ROOT))));
  }

  /** What the fence computes once per prepared statement (and per call for a plain text). */
  public void summarize(String sql, Blackhole bh) {
    bh.consume(lexer.summarize(sql));
  }

  /** Every statement with its span: what the fence computes for a refused text's message. */
  public void statements(String sql, Blackhole bh) {
    bh.consume(lexer.statements(sql));
  }
}
