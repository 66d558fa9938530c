package dev.lease.jdbc.internal.sql;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;

/**
 * What {@link SqlLexer#summarize} found in a text: the {@link SqlKind kinds} of its statements, how
 * many statements it holds, the kind of its only statement, and whether it is ambiguous or chains.
 * Immutable. The summaries of nearly every text (no statement, or one statement with no flag) are
 * shared constants, so reading such a text allocates nothing (LexerBenchmark, docs/benchmarks.md);
 * the fence computes a summary once per prepared statement and caches it.
 *
 * <p>The summary is the union over every reading of the text the lexer could not rule out (see
 * {@link SqlLexer}): if any reading finds a COMMIT, the kinds hold COMMIT; the count is the
 * largest.
 *
 * @param kinds the kinds of the text's statements (unmodifiable)
 * @param count how many statements the text holds (blank ones between semicolons do not count)
 * @param single the kind of the text's only statement; null when it holds none or several
 * @param ambiguous readings of the text disagree in a way no union settles (see {@link SqlLexer})
 * @param chain a COMMIT or ROLLBACK ... AND CHAIN: a new transaction begins as the old one ends
 */
public record SqlSummary(
    Set<SqlKind> kinds, int count, SqlKind single, boolean ambiguous, boolean chain) {

  /** A text with no statement (null, blank, or comments and semicolons only). */
  public static final SqlSummary EMPTY =
      new SqlSummary(EnumSet.noneOf(SqlKind.class), 0, null, false, false);

  /** One statement of each kind, no flag: the summaries of nearly every text, shared. */
  private static final SqlSummary[] ONE = new SqlSummary[SqlKind.values().length];

  static {
    for (SqlKind k : SqlKind.values()) {
      ONE[k.ordinal()] = new SqlSummary(EnumSet.of(k), 1, k, false, false);
    }
  }

  public SqlSummary {
    kinds = Collections.unmodifiableSet(copy(kinds));
    if (count != 1) {
      single = null;
    }
  }

  /** The summary of these facts: a shared one where it exists, else a new one. */
  public static SqlSummary of(
      Set<SqlKind> kinds, int count, SqlKind single, boolean ambiguous, boolean chain) {
    if (!ambiguous && !chain) {
      if (count == 0 && kinds.isEmpty()) {
        return EMPTY;
      }
      if (count == 1 && kinds.size() == 1 && kinds.contains(single)) {
        return ONE[single.ordinal()];
      }
    }
    return new SqlSummary(kinds, count, single, ambiguous, chain);
  }

  /** One statement of {@code kind}. */
  public static SqlSummary one(SqlKind kind) {
    return ONE[kind.ordinal()];
  }

  public boolean has(SqlKind kind) {
    return kinds.contains(kind);
  }

  /** True when any statement of the text is transaction control ({@link SqlKind#isControl}). */
  public boolean hasControl() {
    return kinds.size() > (kinds.contains(SqlKind.OTHER) ? 1 : 0);
  }

  /** This summary, marked ambiguous. */
  public SqlSummary asAmbiguous() {
    return ambiguous ? this : of(kinds, count, single, true, chain);
  }

  /**
   * The union of two summaries: of two readings of one text (the larger count), or of the texts of
   * one batch ({@code add}: the counts add up). Null is "not lexed yet": the other one is the
   * union.
   */
  public static SqlSummary union(SqlSummary a, SqlSummary b, boolean add) {
    if (a == null) {
      return b;
    }
    if (b == null || (!add && a.equals(b))) {
      return a; // readings that agree, the common case: nothing to allocate
    }
    int count = add ? a.count + b.count : Math.max(a.count, b.count);
    SqlKind single = null;
    boolean ambiguous = a.ambiguous || b.ambiguous;
    if (!add && a.count == 1 && b.count == 1) {
      if (a.single != b.single) {
        ambiguous = true; // one reading sees a COMMIT where another sees an UPDATE
      }
      single = a.single;
    } else if (count == 1) {
      single = a.count == 1 ? a.single : b.single;
    }
    EnumSet<SqlKind> kinds = copy(a.kinds);
    kinds.addAll(b.kinds);
    return of(kinds, count, single, ambiguous, a.chain || b.chain);
  }

  /** For messages and tests: {@code 2 statements [OTHER, COMMIT]}. */
  public String describe() {
    StringBuilder b = new StringBuilder();
    b.append(count).append(count == 1 ? " statement [" : " statements [");
    String sep = "";
    for (SqlKind k : kinds) {
      b.append(sep).append(k.name());
      sep = ", ";
    }
    return b.append(']')
        .append(ambiguous ? " (ambiguous)" : "")
        .append(chain ? " (chain)" : "")
        .toString();
  }

  @Override
  public String toString() {
    return describe();
  }

  private static EnumSet<SqlKind> copy(Set<SqlKind> kinds) {
    EnumSet<SqlKind> c = EnumSet.noneOf(SqlKind.class);
    c.addAll(kinds);
    return c;
  }
}
