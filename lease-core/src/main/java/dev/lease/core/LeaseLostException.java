package dev.lease.core;

/** The lease was lost while work ran under it; the work was interrupted. */
public class LeaseLostException extends LeaseException {
  private static final long serialVersionUID = 1L;

  private final transient Lease lease;

  public LeaseLostException(Lease lease, String message, Throwable cause) {
    super(message, cause);
    this.lease = lease;
  }

  /** The lease that was lost. */
  public Lease lease() {
    return lease;
  }
}
