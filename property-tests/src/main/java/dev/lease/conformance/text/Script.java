package dev.lease.conformance.text;

import java.util.List;
import java.util.stream.Collectors;

/**
 * A generated script: statements, how they are joined into text, the JDBC path that sends them, and
 * whether the connection is in autocommit mode.
 *
 * @param statements the statements, each already decorated (case, white space, comments)
 * @param separators what joins statement i and i + 1 (a semicolon with white space and comments)
 * @param path the execute path
 * @param autoCommit whether the connection stays in autocommit mode ({@code false}: {@code
 *     setAutoCommit(false)} before, {@code commit()} after)
 */
public record Script(
    List<ScriptStatement> statements,
    List<String> separators,
    ScriptPath path,
    boolean autoCommit) {

  /** The statements joined into one text, as the whole-text paths send it. */
  public String text() {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < statements.size(); i++) {
      b.append(statements.get(i).sql());
      if (i < separators.size()) {
        b.append(separators.get(i));
      }
    }
    return b.toString();
  }

  public boolean writes() {
    return statements.stream().anyMatch(ScriptStatement::writes);
  }

  @Override
  public String toString() {
    return path
        + (autoCommit ? ", autocommit" : ", setAutoCommit(false) ... commit()")
        + ": "
        + (path.wholeText()
            ? text()
            : statements.stream().map(ScriptStatement::sql).collect(Collectors.joining(" | ")));
  }
}
