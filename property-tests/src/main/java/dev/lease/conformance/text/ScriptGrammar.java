package dev.lease.conformance.text;

import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.lease.conformance.Target;
import dev.lease.conformance.text.ScriptStatement.Kind;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * The small grammar of the SQL-text properties: transaction control in every spelling the target
 * database accepts (and MySQL's COMMIT hidden in executable comments), UPDATEs and INSERTs of a
 * counter table, SELECTs (some with {@code ;COMMIT;} inside literals), session SETs and, on
 * MySQL/MariaDB, DDL that commits implicitly; statements in random case, with white space and
 * comments around them, joined with semicolons.
 */
public final class ScriptGrammar {

  /** A statement before decoration: keywords upper case, {c} the counter table, {s} a scratch. */
  record Template(Kind kind, String sql, int weight) {}

  private final Target target;
  private final String counter;
  private final String scratch;
  private final List<Template> templates;

  /**
   * @param counter the counter table: {@code (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)}
   * @param scratch a table name the DDL statements may create
   */
  public ScriptGrammar(Target target, String counter, String scratch) {
    this.target = target;
    this.counter = counter;
    this.scratch = scratch;
    this.templates = templates(target);
  }

  private static List<Template> templates(Target target) {
    List<Template> t = new ArrayList<>();
    t.add(new Template(Kind.WRITE, "UPDATE {c} SET n = n + 1 WHERE id = 1", 4));
    t.add(new Template(Kind.WRITE, "INSERT INTO {c} (id, n) VALUES ({k}, 1)", 2));
    t.add(new Template(Kind.SELECT, "SELECT n FROM {c} WHERE id = 1", 1));
    t.add(new Template(Kind.SELECT, "SELECT ';COMMIT;' AS x", 1));
    t.add(new Template(Kind.BEGIN, "BEGIN", 2));
    t.add(new Template(Kind.COMMIT, "COMMIT", 2));
    t.add(new Template(Kind.ROLLBACK, "ROLLBACK", 1));
    t.add(new Template(Kind.SAVEPOINT, "SAVEPOINT s1", 1));
    t.add(new Template(Kind.RELEASE, "RELEASE SAVEPOINT s1", 1));
    t.add(new Template(Kind.ROLLBACK_TO, "ROLLBACK TO SAVEPOINT s1", 1));
    if (target.isPostgres()) {
      t.add(new Template(Kind.BEGIN, "START TRANSACTION", 1));
      t.add(new Template(Kind.BEGIN, "BEGIN TRANSACTION", 1));
      t.add(new Template(Kind.COMMIT, "END", 1));
      t.add(new Template(Kind.COMMIT, "COMMIT WORK", 1));
      t.add(new Template(Kind.ROLLBACK, "ABORT", 1));
      t.add(new Template(Kind.SET_TRANSACTION, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", 1));
      t.add(new Template(Kind.SELECT, "SELECT $$;COMMIT;$$ AS x", 1));
      t.add(new Template(Kind.SET, "SET application_name = 'lease'", 1));
    } else if (target.isMySqlFamily()) {
      t.add(new Template(Kind.BEGIN, "START TRANSACTION", 1));
      t.add(new Template(Kind.BEGIN, "BEGIN WORK", 1));
      t.add(new Template(Kind.COMMIT, "COMMIT WORK", 1));
      t.add(new Template(Kind.COMMIT, "/*!COMMIT*/", 1));
      t.add(new Template(Kind.COMMIT, "/*!50000 COMMIT */", 1));
      t.add(new Template(Kind.AUTOCOMMIT_OFF, "SET autocommit = 0", 2));
      t.add(new Template(Kind.AUTOCOMMIT_ON, "SET autocommit = 1", 2));
      t.add(
          new Template(Kind.SET_TRANSACTION, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED", 1));
      t.add(new Template(Kind.SET, "SET @lease_note = 1", 1));
      t.add(new Template(Kind.IMPLICIT_COMMIT, "CREATE TABLE IF NOT EXISTS {s} (a INT)", 1));
    } else {
      t.add(new Template(Kind.BEGIN, "BEGIN TRANSACTION", 1));
      t.add(new Template(Kind.BEGIN, "BEGIN IMMEDIATE", 1));
      t.add(new Template(Kind.COMMIT, "END", 1));
      t.add(new Template(Kind.COMMIT, "END TRANSACTION", 1));
      t.add(new Template(Kind.RELEASE, "RELEASE s1", 1));
    }
    return t;
  }

  /** Decorated statements of one kind set, one per call: the templates weighted. */
  public Gen<ScriptStatement> statements() {
    List<Template> weighted = new ArrayList<>();
    for (Template t : templates) {
      weighted.addAll(Collections.nCopies(t.weight(), t));
    }
    return Generate.pick(weighted)
        .zip(integers().between(0, Integer.MAX_VALUE), this::decorate)
        .describedAs(ScriptStatement::sql);
  }

  /** Scripts of 1 to {@code maxStatements} statements sent through {@code paths}. */
  public Gen<Script> scripts(int maxStatements, List<ScriptPath> paths) {
    return lists()
        .of(statements())
        .ofSizeBetween(1, maxStatements)
        .zip(
            integers().between(0, Integer.MAX_VALUE),
            Generate.pick(paths),
            Generate.booleans(),
            (list, seed, path, autoCommit) ->
                new Script(list, separators(list.size() - 1, seed), path, autoCommit))
        .describedAs(Script::toString);
  }

  /** The template's text in random case, with white space and comments around it. */
  ScriptStatement decorate(Template t, int seed) {
    java.util.Random r = new java.util.Random(seed);
    String sql = caseOf(t.sql(), r.nextInt(3), r);
    sql =
        sql.replace("{C}", "{c}")
            .replace("{S}", "{s}")
            .replace("{K}", "{k}")
            .replace("{c}", counter)
            .replace("{s}", scratch)
            .replace("{k}", Integer.toString(2 + (seed & 0xFFFFF)));
    return new ScriptStatement(t.kind(), around(r) + sql + around(r));
  }

  /** Keywords' case: as written, lower, or random per letter (identifiers are placeholders). */
  private static String caseOf(String sql, int mode, java.util.Random r) {
    if (mode == 0) {
      return sql;
    }
    StringBuilder b = new StringBuilder(sql.length());
    boolean inQuote = false;
    for (int i = 0; i < sql.length(); i++) {
      char c = sql.charAt(i);
      if (c == '\'' || c == '$') {
        inQuote = !inQuote;
      }
      boolean lower = mode == 1 || r.nextBoolean();
      b.append(inQuote ? c : lower ? Character.toLowerCase(c) : c);
    }
    return b.toString();
  }

  /** White space or a comment (never one that could hide SQL from the server). */
  private String around(java.util.Random r) {
    switch (r.nextInt(8)) {
      case 0:
        return " ";
      case 1:
        return "\n\t";
      case 2:
        return " /* note */ ";
      case 3:
        return " /* ; COMMIT; */ ";
      case 4:
        return "\n-- ; COMMIT\n";
      case 5:
        return target.isMySqlFamily() ? "\n# ; COMMIT\n" : "  ";
      default:
        return "";
    }
  }

  private List<String> separators(int n, int seed) {
    java.util.Random r = new java.util.Random(seed);
    List<String> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(r.nextInt(4) == 0 ? " ;\n" + around(r) : ";" + around(r));
    }
    return out;
  }

  /** For messages. */
  @Override
  public String toString() {
    return "ScriptGrammar[" + target.label().toLowerCase(Locale.ROOT) + "]";
  }
}
