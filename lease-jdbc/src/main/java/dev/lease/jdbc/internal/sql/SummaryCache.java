package dev.lease.jdbc.internal.sql;

/**
 * The summaries of texts {@link SqlLexer} read before, so that a statement prepared again from the
 * same text (a pool hands out a new connection handle per transaction, and the application prepares
 * its statements on it again) is not lexed again (issue 36). Bounded: a fixed table of slots chosen
 * by the text's hash, each holding the last text that landed there and its summary; texts longer
 * than {@link #MAX_TEXT} are not kept. A hit compares the whole text, never only its hash, so a
 * text can only get its own summary: the summary depends on nothing but the text and the lexer's
 * dialect (one cache per lexer). Lock-free: a slot is replaced whole by an immutable entry, so a
 * racing reader sees an old entry or the new one, never a mix.
 */
final class SummaryCache {

  /** Slots per lexer: enough for an application's distinct statements, a few hundred kB at most. */
  static final int SLOTS = 512;

  /** The longest text kept (characters): longer ones are rare and cost the most to hold. */
  static final int MAX_TEXT = 2048;

  private record Entry(String text, SqlSummary summary) {}

  private final Entry[] slots;
  private final boolean compareText;

  /**
   * @param slots a power of two
   * @param compareText false only in the negative control that shows a hit must compare the text
   */
  SummaryCache(int slots, boolean compareText) {
    this.slots = new Entry[slots];
    this.compareText = compareText;
  }

  /** The summary kept for exactly this text, or null. */
  SqlSummary get(String text) {
    Entry e = slots[slot(text)];
    if (e == null) {
      return null;
    }
    if (compareText
        ? e.text == text || e.text.equals(text)
        : e.text.hashCode() == text.hashCode()) {
      return e.summary;
    }
    return null;
  }

  void put(String text, SqlSummary summary) {
    if (text.length() <= MAX_TEXT) {
      slots[slot(text)] = new Entry(text, summary);
    }
  }

  private int slot(String text) {
    int h = text.hashCode();
    return (h ^ (h >>> 16)) & (slots.length - 1);
  }
}
