package dev.lease.benchmarks;

import dev.lease.jdbc.internal.sql.SqlDialect;
import dev.lease.jdbc.internal.sql.SqlLexer;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * What reading one SQL text costs the fence (lease-jdbc's internal {@code SqlLexer}, issue 21):
 * {@code summarize}, the kinds and count of a text's statements over every reading of it, which a
 * fenced statement computes once per prepared statement and once per call of {@code
 * execute(String)}; and {@code statements}, the spans. Per dialect, on typical texts of several
 * lengths; {@code readings} holds a backslash in a literal, so it is lexed once per reading the
 * escape settings allow. No database: the lexer alone. Run with {@code -prof gc} for the bytes
 * allocated per call.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class LexerBenchmark {

  @Param({"postgresql", "mysql", "sqlite"})
  public String dialect;

  @Param({"short", "typical", "long", "multi", "readings"})
  public String text;

  SqlLexer lexer;
  String sql;

  @Setup
  public void setUp() {
    lexer = SqlLexer.of(SqlDialect.valueOf(dialect.toUpperCase(Locale.ROOT)));
    sql = text(text);
  }

  @Benchmark
  public void summarize(Blackhole bh) {
    bh.consume(lexer.summarize(sql));
  }

  @Benchmark
  public void statements(Blackhole bh) {
    bh.consume(lexer.statements(sql));
  }

  static String text(String name) {
    switch (name) {
      case "short":
        return "COMMIT";
      case "typical":
        return "UPDATE orders SET status = ?, updated_at = ? WHERE id = ? AND version = ?";
      case "long":
        return "/* report: monthly revenue per region */\n"
            + "SELECT r.name AS region, c.country, date_trunc('month', o.created_at) AS month,\n"
            + "       count(*) AS orders, sum(l.quantity * l.unit_price) AS revenue,\n"
            + "       sum(CASE WHEN o.status = 'refunded' THEN 1 ELSE 0 END) AS refunds\n"
            + "  FROM orders o\n"
            + "  JOIN customers c ON c.id = o.customer_id\n"
            + "  JOIN regions r ON r.id = c.region_id\n"
            + "  JOIN order_lines l ON l.order_id = o.id -- lines of the order\n"
            + " WHERE o.created_at >= ? AND o.created_at < ?\n"
            + "   AND o.status IN ('paid', 'shipped', 'refunded')\n"
            + "   AND c.email NOT LIKE '%@example.com'\n"
            + "   AND (r.name = ? OR ? IS NULL)\n"
            + " GROUP BY r.name, c.country, date_trunc('month', o.created_at)\n"
            + "HAVING sum(l.quantity * l.unit_price) > 1000\n"
            + " ORDER BY month, revenue DESC\n"
            + " LIMIT 500";
      case "multi":
        return "BEGIN; UPDATE accounts SET balance = balance - 10 WHERE id = 1;"
            + " UPDATE accounts SET balance = balance + 10 WHERE id = 2; COMMIT";
      case "readings":
        return "INSERT INTO notes (id, body) VALUES (?, 'it\\'s; a note')";
      default:
        throw new IllegalArgumentException(name);
    }
  }
}
