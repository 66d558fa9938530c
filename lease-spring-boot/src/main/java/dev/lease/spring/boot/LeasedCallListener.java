package dev.lease.spring.boot;

/**
 * Told how each call of a {@link Leased} method ended; a bean of this type is called by the
 * starter's interceptor (the metrics binder is one). Called on the calling thread: keep it quick.
 */
public interface LeasedCallListener {

  /** How a call ended. */
  enum Outcome {
    /**
     * The lease was claimed and the method ran to its end (returned or threw) without its lease
     * ending under it.
     */
    RAN,
    /** Another holder had the lease: the method did not run. */
    SKIPPED,
    /** The lease was lost while the method ran: it was interrupted ({@code LeaseLostException}). */
    LOST,
    /**
     * The lease was released while the method ran, by the {@code LeaseManager} closing (shutdown):
     * it was interrupted first ({@code LeaseReleasedException}).
     */
    STOPPED
  }

  void called(String lease, Outcome outcome);
}
