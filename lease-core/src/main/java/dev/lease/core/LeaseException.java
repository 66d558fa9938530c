package dev.lease.core;

/**
 * A lease operation could not be carried out: the database is unreachable or unsupported, the lease
 * table is missing, or a statement failed. The message says what happened and what to do.
 */
public class LeaseException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public LeaseException(String message) {
    super(message);
  }

  public LeaseException(String message, Throwable cause) {
    super(message, cause);
  }
}
