package dev.lease.jdbc.internal.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The lexer against {@link ReferenceSqlLexer}, the lexer before issue 21's restructuring, on texts
 * made of the tokens the readings and keyword rules turn on: both say the same about every text in
 * every dialect (summary facts and statements). The golden test pins a fixed corpus; this one draws
 * new texts each run (the seed is in the failure message).
 */
class SqlLexerDifferentialTest {

  @Test
  void theLexerReadsRandomTextsAsTheReferenceDoes() {
    long seed = Long.getLong("lease.lexer.seed", new Random().nextLong());
    Random r = new Random(seed);
    List<String> texts = new ArrayList<>(SqlLexerGoldenTest.fuzz(20_000, r.nextLong()));
    texts.addAll(SqlLexerGoldenTest.corpus());
    for (String text : texts) {
      for (SqlDialect d : SqlDialect.values()) {
        ReferenceSqlLexer reference = ReferenceSqlLexer.of(d);
        String expected =
            SqlLexerGoldenTest.readout(reference.summarize(text), reference.statements(text));
        String actual = SqlLexerGoldenTest.readout(SqlLexer.of(d), text);
        assertEquals(
            expected,
            actual,
            () ->
                d
                    + ": "
                    + SqlLexerGoldenTest.escape(text)
                    + " (replay with -Dlease.lexer.seed="
                    + seed
                    + ")");
      }
    }
  }
}
