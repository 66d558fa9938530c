package dev.lease.jdbc.internal.sql;

/**
 * The statement {@link SqlScan} is in, as the classification rules read it ({@link Words}): a
 * window of its first words, where each starts and ends in the text, and the flags the scan noted.
 * The scan writes it; {@link SqlSyntax}'s rules only read it.
 */
final class StatementWords implements Words {

  /** How many of a statement's first words are kept. */
  static final int WINDOW = 8;

  String sql;
  boolean firstIsWord;
  char firstChar;
  final int[] wordStart = new int[WINDOW];
  final int[] wordEnd = new int[WINDOW];
  int words;
  boolean autocommitNamed;
  boolean concurrently;
  boolean inner; // MariaDB SET STATEMENT ... FOR: the window holds the statement after FOR

  /** A new statement begins. */
  void reset() {
    firstIsWord = false;
    firstChar = 0;
    words = 0;
    autocommitNamed = false;
    concurrently = false;
    inner = false;
  }

  @Override
  public String sql() {
    return sql;
  }

  @Override
  public boolean firstIsWord() {
    return firstIsWord;
  }

  @Override
  public char firstChar() {
    return firstChar;
  }

  @Override
  public int words() {
    return words;
  }

  @Override
  public int wordStart(int w) {
    return wordStart[w];
  }

  @Override
  public int wordEnd(int w) {
    return wordEnd[w];
  }

  @Override
  public boolean inner() {
    return inner;
  }

  @Override
  public boolean autocommitNamed() {
    return autocommitNamed;
  }

  @Override
  public boolean concurrently() {
    return concurrently;
  }

  @Override
  public int windowed() {
    return Math.min(words, WINDOW);
  }

  @Override
  public boolean isWord(int w, String keyword) {
    return w < windowed() && equalsIgnoreCase(wordStart[w], wordEnd[w], keyword);
  }

  @Override
  public boolean isName(int w, String name) {
    if (isWord(w, name)) {
      return true;
    }
    if (w >= windowed()) {
      return false;
    }
    int from = wordEnd[w] - name.length();
    return from > wordStart[w]
        && sql.charAt(from - 1) == '.'
        && equalsIgnoreCase(from, wordEnd[w], name);
  }

  /** ASCII case-insensitive, as the keyword tables: servers match keywords in ASCII only. */
  boolean equalsIgnoreCase(int from, int to, String keyword) {
    return to - from == keyword.length()
        && SqlSyntax.Keywords.sameIgnoringAsciiCase(sql, from, keyword);
  }
}
