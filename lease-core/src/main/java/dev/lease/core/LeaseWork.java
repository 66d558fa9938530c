package dev.lease.core;

/** Work that runs under a lease, on its own thread with the lease bound to it. */
@FunctionalInterface
public interface LeaseWork<T> {
  /**
   * Does the work. When the lease is lost the thread is interrupted: stop promptly (check {@link
   * Thread#isInterrupted()} in loops, let {@link InterruptedException} propagate).
   */
  T run(Lease lease) throws Exception;
}
