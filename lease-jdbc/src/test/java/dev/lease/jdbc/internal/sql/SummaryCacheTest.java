package dev.lease.jdbc.internal.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.quicktheories.QuickTheory.qt;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The lexer's cache of summaries (issue 36) gives a text its own summary and no other: over
 * generated texts read twice, and interleaved so that slots are replaced, the cached answer equals
 * a fresh lexing; two texts with the same hash never share a summary. The control compares hashes
 * instead of texts and hands a COMMIT the summary of a SELECT.
 */
class SummaryCacheTest {

  @Test
  void aCachedSummaryIsTheSummaryALexingFindsInEveryDialect() {
    for (SqlDialect d : List.of(SqlDialect.POSTGRESQL, SqlDialect.MYSQL, SqlDialect.SQLITE)) {
      SqlLexer lexer = SqlLexer.of(d);
      qt().withExamples(3_000)
          .forAll(SqlLexerPropertyTest.texts(d), SqlLexerPropertyTest.texts(d))
          .check(
              (a, b) -> {
                SqlSummary first = lexer.summarize(a.sql());
                lexer.summarize(b.sql()); // may replace a's slot
                SqlSummary again = lexer.summarize(a.sql());
                SqlSummary fresh = lexer.lex(a.sql());
                return first.equals(fresh) && again.equals(fresh);
              });
    }
  }

  /** Two texts with one hash: a SELECT and a COMMIT. */
  static String[] collision() {
    Map<Integer, String> selects = new HashMap<>();
    for (int i = 0; i < 200_000; i++) {
      String s = "SELECT " + i;
      selects.put(s.hashCode(), s);
    }
    for (int j = 0; ; j++) {
      String c = "COMMIT -- " + j;
      String s = selects.get(c.hashCode());
      if (s != null) {
        return new String[] {s, c};
      }
    }
  }

  @Test
  void twoTextsWithOneHashKeepTheirOwnSummaries() {
    String[] pair = collision();
    assertEquals(pair[0].hashCode(), pair[1].hashCode());
    SqlLexer lexer = SqlLexer.of(SqlDialect.POSTGRESQL);
    SummaryCache cache = new SummaryCache(SummaryCache.SLOTS, true);
    cache.put(pair[0], lexer.lex(pair[0]));
    assertNull(cache.get(pair[1]), "a COMMIT must not get the summary of a SELECT");
    assertSame(SqlKind.OTHER, cache.get(pair[0]).single());
  }

  @Test
  void controlAHitByHashAloneHandsACommitTheSummaryOfASelect() {
    String[] pair = collision();
    SqlLexer lexer = SqlLexer.of(SqlDialect.POSTGRESQL);
    SummaryCache broken = new SummaryCache(SummaryCache.SLOTS, false);
    broken.put(pair[0], lexer.lex(pair[0]));
    SqlSummary wrong = broken.get(pair[1]);
    assertNotEquals(lexer.lex(pair[1]), wrong, "the control must be caught: " + pair[1]);
  }

  @Test
  void longTextsAreNotKept() {
    SummaryCache cache = new SummaryCache(SummaryCache.SLOTS, true);
    String text = "SELECT '" + "x".repeat(SummaryCache.MAX_TEXT) + "'";
    cache.put(text, SqlSummary.EMPTY);
    assertNull(cache.get(text));
  }
}
