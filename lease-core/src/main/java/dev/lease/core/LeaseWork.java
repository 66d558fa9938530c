package dev.lease.core;

/** Work that runs under a lease, on its own thread with the lease bound to it. */
@FunctionalInterface
public interface LeaseWork<T> {
  /**
   * Does the work. When the lease is lost or released (a release, {@link LeaseManager#close()}, a
   * scheduler closing) the thread is interrupted: stop promptly (check {@link
   * Thread#isInterrupted()} in loops, let {@link InterruptedException} propagate). A release waits
   * up to the grace period for the work to end before it gives the lease back.
   */
  T run(Lease lease) throws Exception;
}
