package dev.lease.core.internal;

/**
 * The calling thread bound to a lease as work under it ({@link LeaseInternals#bindCurrentThread}).
 * Not API.
 */
@FunctionalInterface
public interface CallerWork {

  /**
   * Ends the work: called by the bound thread as its last act under the lease. Once it returned, no
   * release or loss interrupts the thread any more (an interrupt that came before stays set; the
   * caller clears it if it was the lease's).
   *
   * @return true if a release or loss stopped the work (interrupted its thread) before it ended
   */
  boolean end();
}
