package dev.lease.jdbc;

/**
 * What {@link SqlLexer#summarize} found in a text, packed into one {@code long} so that the hot
 * path allocates nothing: the {@link SqlKind kinds} of its statements as a bit mask, how many
 * statements it holds, the kind of its only statement, and flags. {@link #NONE} (0) means "not
 * lexed yet"; every summary the lexer returns has {@link #VALID} set.
 *
 * <p>The summary is the union over every reading of the text the lexer could not rule out (see
 * {@link SqlLexer}): if any reading finds a COMMIT, the mask has COMMIT; the count is the largest.
 */
final class SqlSummary {

  /** Not lexed yet. */
  static final long NONE = 0;

  /** Set on every summary the lexer returns. */
  static final long VALID = 1L << 62;

  /** Readings of the text disagree in a way no union settles (see {@link SqlLexer}). */
  static final long AMBIGUOUS = 1L << 40;

  /** A COMMIT or ROLLBACK ... AND CHAIN: a new transaction begins as the old one ends. */
  static final long CHAIN = 1L << 41;

  private static final int COUNT_SHIFT = 16;
  private static final int SINGLE_SHIFT = 32;
  private static final int MAX_COUNT = 0xFFFF;

  private SqlSummary() {}

  static long of(int kindMask, int count, int singleKind, long flags) {
    long c = Math.min(count, MAX_COUNT);
    long single = count == 1 ? singleKind & 0xF : 0;
    return VALID | (kindMask & 0xFFFFL) | (c << COUNT_SHIFT) | (single << SINGLE_SHIFT) | flags;
  }

  /** The kinds of the text's statements, one bit per {@link SqlKind} ({@code 1 << kind}). */
  static int kinds(long summary) {
    return (int) (summary & 0xFFFF);
  }

  /** How many statements the text holds (blank ones between semicolons do not count). */
  static int count(long summary) {
    return (int) ((summary >>> COUNT_SHIFT) & MAX_COUNT);
  }

  /** The kind of the text's only statement; 0 when it holds none or several. */
  static int single(long summary) {
    return (int) ((summary >>> SINGLE_SHIFT) & 0xF);
  }

  static boolean has(long summary, int kind) {
    return (summary & (1L << kind)) != 0;
  }

  /** True when any statement of the text is transaction control ({@link SqlKind#CONTROL}). */
  static boolean hasControl(long summary) {
    return (kinds(summary) & SqlKind.CONTROL) != 0;
  }

  static boolean ambiguous(long summary) {
    return (summary & AMBIGUOUS) != 0;
  }

  static boolean chain(long summary) {
    return (summary & CHAIN) != 0;
  }

  /**
   * The union of two summaries: of two readings of one text (the larger count), or of the texts of
   * one batch ({@code add}: the counts add up).
   */
  static long union(long a, long b, boolean add) {
    if (a == NONE) {
      return b;
    }
    if (b == NONE) {
      return a;
    }
    int count = add ? count(a) + count(b) : Math.max(count(a), count(b));
    int single = 0;
    long flags = (a | b) & (AMBIGUOUS | CHAIN);
    if (!add && count(a) == 1 && count(b) == 1) {
      if (single(a) != single(b)) {
        flags |= AMBIGUOUS; // one reading sees a COMMIT where another sees an UPDATE
      }
      single = single(a);
    } else if (count == 1) {
      single = count(a) == 1 ? single(a) : single(b);
    }
    return of(kinds(a) | kinds(b), count, single, flags);
  }

  /** For messages and tests: {@code 2 statements [OTHER, COMMIT]}. */
  static String describe(long summary) {
    if (summary == NONE) {
      return "not lexed";
    }
    int n = count(summary);
    return n
        + (n == 1 ? " statement [" : " statements [")
        + SqlKind.names(kinds(summary))
        + "]"
        + (ambiguous(summary) ? " (ambiguous)" : "")
        + (chain(summary) ? " (chain)" : "");
  }
}
