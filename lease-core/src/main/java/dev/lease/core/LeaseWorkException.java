package dev.lease.core;

/** The work run under a lease threw; {@link #getCause()} is its exception, with its own stack. */
public class LeaseWorkException extends Exception {
  private static final long serialVersionUID = 1L;

  public LeaseWorkException(String message, Throwable cause) {
    super(message, cause);
  }
}
