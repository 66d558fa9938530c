package dev.lease.core;

/**
 * How one renewal of one lease ended ({@link LeaseListener#renewalCompleted}): what a metrics
 * binder counts per outcome.
 */
public enum RenewalOutcome {
  /** The database extended the lease. */
  RENEWED,
  /** The database says the lease is no longer this holder's: it is lost. */
  LOST,
  /**
   * The attempt ran out of time (the attempt timeout, a lock wait or statement bound, a network
   * timeout); retried at the next renew interval until the local deadline.
   */
  TIMEOUT,
  /** The attempt failed otherwise (connection, SQL error); retried like a timeout. */
  ERROR
}
