package dev.lease.jdbc.internal.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Pins everything the lexer says about a corpus of texts, in every dialect, so that a rewrite of
 * the lexer (issue 21) cannot change a classification unnoticed: a misread write could pass the
 * fence.
 *
 * <p>The corpus: {@code lexer-corpus-scripts.txt}, texts the property tests send (property-tests'
 * {@code ScriptGrammar.scripts(8, every ScriptPath)} for PostgreSQL, MySQL, MariaDB and SQLite, 300
 * scripts each drawn with {@code java.util.Random(21)} as the randomness source: whole scripts and
 * their single statements; and 300 texts per dialect of this module's {@code
 * SqlLexerPropertyTest.texts}, {@code Random(25)}), {@code lexer-corpus-literals.txt}, every string
 * literal of this module's lexer tests (SqlLexerTest, SqlStandardBodyTest, SqlTextFencingTest,
 * SqlLexerPropertyTest, OutsideTransactionTest), and {@link #fuzz} texts made of the tokens the
 * readings turn on (quotes, backslashes, dollar quotes, executable comments, hints, keywords), from
 * a fixed seed. One text a line, with {@code \n}, {@code \r}, {@code \t}, {@code \\} and {@code
 * \}{@code uXXXX} escapes.
 *
 * <p>The golden file holds, per text, the summary of {@link SqlLexer#summarize} (count, kinds, the
 * single statement's kind, ambiguous, chain) and the statements of {@link SqlLexer#statements}
 * (kind, span, chain), dialects with the same outcome on one line. Regenerate it, after a change
 * meant to change the outcome, with {@code -Dlease.golden.update=true} and review the diff.
 */
class SqlLexerGoldenTest {

  static final String UPDATE_PROPERTY = "lease.golden.update";
  static final Path GOLDEN =
      Path.of("src/test/resources/dev/lease/jdbc/internal/sql/lexer-golden.txt");
  static final List<String> CORPORA =
      List.of("lexer-corpus-scripts.txt", "lexer-corpus-literals.txt");

  @Test
  void theLexerReadsTheCorpusAsItDidWhenTheGoldenFileWasWritten() throws IOException {
    String actual = golden(corpus());
    if (Boolean.getBoolean(UPDATE_PROPERTY)) {
      Files.writeString(GOLDEN, actual, StandardCharsets.UTF_8);
      return;
    }
    String expected = Files.readString(GOLDEN, StandardCharsets.UTF_8);
    if (!expected.equals(actual)) {
      assertEquals(
          firstDifference(expected, actual),
          firstDifference(actual, expected),
          "the lexer's outcome differs from "
              + GOLDEN
              + "; if on purpose, regenerate with -D"
              + UPDATE_PROPERTY
              + "=true and review the diff");
    }
  }

  /** Every text of the corpus files and the fuzz texts, each once, in a fixed order. */
  static List<String> corpus() {
    Set<String> texts = new LinkedHashSet<>();
    for (String name : CORPORA) {
      for (String line : lines(name)) {
        texts.add(unescape(line));
      }
    }
    texts.addAll(fuzz(2_000, 2121));
    return new ArrayList<>(texts);
  }

  static String golden(List<String> corpus) {
    StringBuilder b = new StringBuilder();
    for (String text : corpus) {
      b.append("TEXT ").append(escape(text)).append('\n');
      Map<String, List<String>> outcomes = new LinkedHashMap<>();
      for (SqlDialect d : SqlDialect.values()) {
        outcomes
            .computeIfAbsent(readout(SqlLexer.of(d), text), k -> new ArrayList<>())
            .add(d.name());
      }
      outcomes.forEach(
          (outcome, dialects) ->
              b.append("  ")
                  .append(String.join(",", dialects))
                  .append(": ")
                  .append(outcome)
                  .append('\n'));
    }
    return b.toString();
  }

  /** Every fact the lexer gives about {@code text}, decoded to names. */
  static String readout(SqlLexer lexer, String text) {
    return readout(lexer.summarize(text), lexer.statements(text));
  }

  static String readout(SqlSummary s, List<SqlStatement> statements) {
    StringBuilder b = new StringBuilder();
    b.append("count=").append(s.count());
    b.append(" kinds=").append(s.kinds());
    b.append(" single=").append(s.count() == 1 ? s.single() : "-");
    if (s.ambiguous()) {
      b.append(" AMBIGUOUS");
    }
    if (s.chain()) {
      b.append(" CHAIN");
    }
    b.append(" |");
    for (SqlStatement st : statements) {
      b.append(' ').append(st);
    }
    return b.toString();
  }

  /** Texts of 1 to 16 tokens on which the lexer's readings and keyword rules turn. */
  static List<String> fuzz(int count, long seed) {
    String[] tokens = {
      "'",
      "\\",
      "\"",
      "`",
      "[",
      "]",
      "$$",
      "$a$",
      "$1",
      "a$b",
      "E'",
      "e'x\\'",
      "/*",
      "*/",
      "/*/",
      "/*!",
      "/*!50700 ",
      "/*!80000 ",
      "/*M!",
      "/*M!100500 ",
      "/*+ ",
      "--",
      "-- ",
      "--\n",
      "#",
      "\n",
      "\r",
      "\t",
      ";",
      ";",
      ";",
      " ",
      " ",
      " ",
      "(",
      ")",
      "{",
      "{call p(?)}",
      "é",
      "ı",
      "SELECT",
      "select",
      "UPDATE t SET n = 1",
      "INSERT",
      "COMMIT",
      "commit",
      "END",
      "BEGIN",
      "begin",
      "ATOMIC",
      "CASE",
      "CREATE",
      "CREATE FUNCTION f() BEGIN ATOMIC",
      "TRIGGER",
      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN",
      "TEMP",
      "TEMPORARY",
      "TABLE",
      "SEQUENCE",
      "DROP",
      "ALTER",
      "SYSTEM",
      "DATABASE",
      "CONCURRENTLY",
      "INDEX",
      "SET",
      "autocommit",
      "\"autocommit\"",
      "`autocommit`",
      "STATEMENT",
      "FOR",
      "TRANSACTION",
      "WORK",
      "ROLLBACK",
      "TO",
      "SAVEPOINT",
      "RELEASE",
      "AND",
      "CHAIN",
      "NO",
      "START",
      "XA",
      "PREPARE",
      "PREPARED",
      "CALL",
      "EXECUTE",
      "NOT",
      "LOCK",
      "TABLES",
      "VACUUM",
      "PRAGMA",
      "ABORT",
      "LOAD",
      "x",
      "1",
      "=",
    };
    Random r = new Random(seed);
    List<String> out = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      StringBuilder b = new StringBuilder();
      int n = 1 + r.nextInt(16);
      for (int t = 0; t < n; t++) {
        b.append(tokens[r.nextInt(tokens.length)]);
        if (r.nextInt(3) == 0) {
          b.append(' ');
        }
      }
      out.add(b.toString());
    }
    return out;
  }

  static List<String> lines(String resource) {
    try (InputStream in = SqlLexerGoldenTest.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("no resource " + resource);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static String unescape(String line) {
    StringBuilder b = new StringBuilder(line.length());
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      if (c != '\\') {
        b.append(c);
        continue;
      }
      char e = line.charAt(++i);
      switch (e) {
        case 'n' -> b.append('\n');
        case 'r' -> b.append('\r');
        case 't' -> b.append('\t');
        case '\\' -> b.append('\\');
        case 'u' -> {
          b.append((char) Integer.parseInt(line.substring(i + 1, i + 5), 16));
          i += 4;
        }
        default -> throw new IllegalArgumentException("bad escape \\" + e + " in " + line);
      }
    }
    return b.toString();
  }

  static String escape(String text) {
    StringBuilder b = new StringBuilder(text.length());
    for (char c : text.toCharArray()) {
      switch (c) {
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20 || c >= 0x7F) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.toString();
  }

  /**
   * The block of {@code a} (a TEXT line and its outcomes) where it first differs from {@code b}.
   */
  private static String firstDifference(String a, String b) {
    int i = 0;
    int n = Math.min(a.length(), b.length());
    while (i < n && a.charAt(i) == b.charAt(i)) {
      i++;
    }
    int from = a.lastIndexOf("TEXT ", i);
    int to = a.indexOf("\nTEXT ", i);
    return a.substring(Math.max(from, 0), to < 0 ? a.length() : to);
  }
}
