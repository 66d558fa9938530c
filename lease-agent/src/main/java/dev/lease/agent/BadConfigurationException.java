package dev.lease.agent;

/**
 * The agent's configuration is wrong; the message says what and how to fix it, never a password.
 * The agent stops the JVM with it: a half-fenced application is the worst state to run in.
 */
final class BadConfigurationException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  BadConfigurationException(String message) {
    super(message);
  }
}
