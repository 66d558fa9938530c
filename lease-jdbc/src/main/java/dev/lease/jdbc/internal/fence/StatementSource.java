package dev.lease.jdbc.internal.fence;

/** Where the text of a statement the fence runs comes from: what the fence reads to classify it. */
enum StatementSource {
  /** {@code execute(String)} and friends: the text passed to the call. */
  TEXT,
  /** A prepared or callable statement: its own SQL, read once. */
  PREPARED,
  /** {@code executeBatch}: every text added to the batch (or the prepared SQL, once per entry). */
  BATCH,
  /** An updatable result set's row change: an ordinary write, no text to read. */
  ROW_CHANGE
}
