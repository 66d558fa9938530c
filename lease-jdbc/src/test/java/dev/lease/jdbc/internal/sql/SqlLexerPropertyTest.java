package dev.lease.jdbc.internal.sql;

import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * The lexer against generated texts whose statements are known: statements of every kind, with
 * literals, quoted identifiers, dollar quotes and comments that hold semicolons and keywords, in
 * random case, joined with semicolons, white space and comments. In every dialect the lexer finds
 * exactly the statements that were joined, with their kinds, and every reading agrees.
 */
class SqlLexerPropertyTest {

  record Piece(SqlKind kind, String sql) {}

  record Text(SqlDialect dialect, List<Piece> pieces, String sql) {
    List<SqlKind> kinds() {
      return pieces.stream().map(Piece::kind).collect(Collectors.toList());
    }

    @Override
    public String toString() {
      return dialect + ": " + sql.replace("\n", "\\n") + " -> " + kinds();
    }
  }

  /** Statements of each kind in the dialect, keywords upper case. */
  static List<Piece> bases(SqlDialect d) {
    List<Piece> p = new ArrayList<>();
    p.add(new Piece(SqlKind.OTHER, "UPDATE t SET n = n + 1 WHERE id = 1"));
    p.add(new Piece(SqlKind.OTHER, "SELECT n FROM t"));
    p.add(new Piece(SqlKind.OTHER, "INSERT INTO t (id) VALUES (2)"));
    p.add(new Piece(SqlKind.BEGIN, "BEGIN"));
    p.add(new Piece(SqlKind.COMMIT, "COMMIT"));
    p.add(new Piece(SqlKind.ROLLBACK, "ROLLBACK"));
    p.add(new Piece(SqlKind.SAVEPOINT, "SAVEPOINT s"));
    p.add(new Piece(SqlKind.RELEASE, "RELEASE SAVEPOINT s"));
    p.add(new Piece(SqlKind.ROLLBACK_TO, "ROLLBACK TO SAVEPOINT s"));
    switch (d) {
      case POSTGRESQL:
        p.add(new Piece(SqlKind.COMMIT, "END"));
        p.add(new Piece(SqlKind.BEGIN, "START TRANSACTION"));
        p.add(new Piece(SqlKind.SET_TRANSACTION, "SET TRANSACTION READ ONLY"));
        p.add(new Piece(SqlKind.NON_TRANSACTIONAL, "VACUUM"));
        p.add(new Piece(SqlKind.PREPARE_TRANSACTION, "PREPARE TRANSACTION 'x'"));
        p.add(new Piece(SqlKind.COMMIT_PREPARED, "COMMIT PREPARED 'x'"));
        p.add(new Piece(SqlKind.OTHER, "SELECT $$ ; COMMIT ; $$"));
        p.add(new Piece(SqlKind.OTHER, "SELECT $tag$ ';' $$ ; END $tag$"));
        p.add(new Piece(SqlKind.OTHER, "SELECT E'it''s ; COMMIT'"));
        p.add(new Piece(SqlKind.OTHER, "DO $$ BEGIN COMMIT; END $$"));
        break;
      case MYSQL:
        p.add(new Piece(SqlKind.BEGIN, "START TRANSACTION"));
        p.add(new Piece(SqlKind.SET_AUTOCOMMIT, "SET autocommit = 0"));
        p.add(new Piece(SqlKind.SET_TRANSACTION, "SET TRANSACTION READ ONLY"));
        p.add(new Piece(SqlKind.IMPLICIT_COMMIT, "CREATE TABLE x (a INT)"));
        p.add(new Piece(SqlKind.ROUTINE, "CALL p()"));
        p.add(new Piece(SqlKind.COMMIT, "/*!COMMIT*/"));
        p.add(new Piece(SqlKind.OTHER, "SELECT `a;COMMIT` FROM t"));
        p.add(new Piece(SqlKind.OTHER, "SELECT \"a ; COMMIT\" # ; COMMIT\n"));
        break;
      case SQLITE:
        p.add(new Piece(SqlKind.COMMIT, "END TRANSACTION"));
        p.add(new Piece(SqlKind.NON_TRANSACTIONAL, "VACUUM"));
        p.add(new Piece(SqlKind.OTHER, "SELECT [a;COMMIT], `b;END` FROM t"));
        p.add(
            new Piece(
                SqlKind.OTHER,
                "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET n = 1; SELECT 1; END"));
        break;
      default:
    }
    return p;
  }

  /** Decorations that end a statement without changing what it is (comments, literals). */
  static String tail(SqlDialect d, Random r) {
    switch (r.nextInt(d == SqlDialect.MYSQL ? 6 : 5)) {
      case 0:
        return " /* ; COMMIT */";
      case 1:
        return " -- ; COMMIT\n";
      case 2:
        return d == SqlDialect.POSTGRESQL ? " /* a /* ; COMMIT */ b */" : " /* x */";
      case 3:
        return "\t";
      case 5:
        return " # ; COMMIT\n";
      default:
        return "";
    }
  }

  static String caseOf(String sql, Random r) {
    if (r.nextBoolean()) {
      return sql;
    }
    StringBuilder b = new StringBuilder();
    boolean quoted = false;
    for (char c : sql.toCharArray()) {
      if ("'\"`[]$".indexOf(c) >= 0) {
        quoted = !quoted;
      }
      b.append(!quoted && r.nextBoolean() ? Character.toLowerCase(c) : c);
    }
    return b.toString();
  }

  static Gen<Text> texts(SqlDialect d) {
    List<Piece> bases = bases(d);
    Gen<Piece> piece =
        Generate.pick(bases)
            .zip(
                integers().all(),
                (p, seed) -> {
                  Random r = new Random(seed);
                  String lead = r.nextInt(4) == 0 ? "/* lead; COMMIT */ " : "";
                  return new Piece(p.kind(), lead + caseOf(p.sql(), r) + tail(d, r));
                });
    return lists()
        .of(piece)
        .ofSizeBetween(1, 6)
        .zip(
            integers().all(),
            (pieces, seed) -> {
              Random r = new Random(seed);
              StringBuilder b = new StringBuilder(r.nextBoolean() ? "  " : "");
              for (int i = 0; i < pieces.size(); i++) {
                b.append(pieces.get(i).sql());
                if (i < pieces.size() - 1) {
                  b.append(r.nextBoolean() ? ";" : " ;\n ").append(r.nextInt(3) == 0 ? ";" : "");
                }
              }
              if (r.nextBoolean()) {
                b.append(";");
              }
              return new Text(d, pieces, b.toString());
            });
  }

  @Test
  void theLexerFindsExactlyTheStatementsThatWereJoinedInEveryDialect() {
    for (SqlDialect d : List.of(SqlDialect.POSTGRESQL, SqlDialect.MYSQL, SqlDialect.SQLITE)) {
      SqlLexer lexer = SqlLexer.of(d);
      qt().withExamples(3_000)
          .forAll(texts(d))
          .check(
              t -> {
                List<SqlStatement> found = lexer.statements(t.sql());
                SqlSummary s = lexer.summarize(t.sql());
                return found.stream()
                        .map(SqlStatement::kind)
                        .collect(Collectors.toList())
                        .equals(t.kinds())
                    && s.count() == t.kinds().size()
                    && s.kinds().containsAll(t.kinds())
                    && !s.ambiguous()
                    && found.stream()
                        .allMatch(st -> lexer.summarize(st.text(t.sql())).single() == st.kind());
              });
    }
  }
}
