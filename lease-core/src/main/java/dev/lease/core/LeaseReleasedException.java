package dev.lease.core;

/**
 * The lease was released while work ran under it: by {@link Lease#release()}, by {@link
 * LeaseManager#close()} (a shutdown) or by a scheduler closing. The release stopped the work first
 * (interrupted it and waited up to the grace period) and then gave the lease back. Not a loss: no
 * failure policy ran. {@link #workStopped()} says whether the work ended within the grace period.
 */
public class LeaseReleasedException extends LeaseException {
  private static final long serialVersionUID = 1L;

  private final transient Lease lease;
  private final boolean workStopped;

  public LeaseReleasedException(Lease lease, String message, boolean workStopped, Throwable cause) {
    super(message, cause);
    this.lease = lease;
    this.workStopped = workStopped;
  }

  /** The lease that was released. */
  public Lease lease() {
    return lease;
  }

  /**
   * True if the work ended within the grace period, before the lease was given back; false if it
   * was still running then (it was released anyway: shutdown is not a loss, so no failure policy
   * ran, and its fenced transactions are refused from then on).
   */
  public boolean workStopped() {
    return workStopped;
  }
}
