package dev.lease.spring.boot;

/**
 * Told how each call of a {@link Leased} method ended; a bean of this type is called by the
 * starter's interceptor (the metrics binder is one). Called on the calling thread: keep it quick.
 */
public interface LeasedCallListener {

  /** How a call ended. */
  enum Outcome {
    /** The lease was claimed and the method ran to its end (returned or threw). */
    RAN,
    /** Another holder had the lease: the method did not run. */
    SKIPPED,
    /** The lease was lost while the method ran. */
    LOST
  }

  void called(String lease, Outcome outcome);
}
