package dev.lease.core.internal;

/**
 * What runs a started {@link dev.lease.core.group.LeaseGroup}'s passes. By default the group's own
 * daemon thread runs one every pass interval, the first at once. A simulation injects its own
 * through {@link GroupInternals#passTrigger} (as client-go's leader election takes an injected
 * clock): it keeps the pass it is handed and calls it itself, in virtual time.
 *
 * <p>Not API: it may change in any release.
 */
@FunctionalInterface
public interface GroupPassTrigger {

  /**
   * Called once, by the group's {@code start()}, on the caller's thread.
   *
   * @param pass one pass of the group on the calling thread; it throws {@link
   *     dev.lease.core.LeaseException} if the database could not be reached, and {@link
   *     IllegalStateException} once the group or its manager is closed (stop calling it then)
   * @param intervalNanos the group's pass interval
   */
  void start(Runnable pass, long intervalNanos);
}
