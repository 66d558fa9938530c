package dev.lease.jdbc.internal.fence;

/**
 * What the user called, for a first statement that carries the verify along ({@link Piggyback}):
 * the fence then presents the statement's results itself, in the shape the call returns.
 */
enum CallShape {
  /** Any other call: it never carries the verify. */
  NONE,
  /** {@code execute}: true if the first result is a result set. */
  EXECUTE,
  /** {@code executeQuery}: the result set. */
  QUERY,
  /** {@code executeUpdate}: the update count. */
  UPDATE,
  /** {@code executeLargeUpdate}: the update count as a long. */
  LARGE_UPDATE
}
