package dev.lease.core.group;

import dev.lease.core.Lease;

/**
 * Observes a {@link LeaseGroup} (metrics: held count, claims, sheds, losses). Every method has an
 * empty default; they run on the thread of the pass or of the call that caused them; exceptions are
 * logged and ignored. The keys' leases are ordinary leases, so the manager's {@code LeaseListener}s
 * see their claims, renewals, losses and releases too.
 */
public interface GroupListener {

  /** A pass ended: this process holds {@code held} keys, its fair share is {@code share}. */
  default void passCompleted(String group, int held, int share, int liveMembers) {}

  /** A pass failed (the database could not be reached); the next pass tries again. */
  default void passFailed(String group, Exception cause) {}

  /** This process claimed {@code key}. */
  default void claimed(String group, String key, Lease lease) {}

  /** This process gave {@code key} back because it held more than its fair share. */
  default void shed(String group, String key) {}

  /**
   * This process gave {@code key} back for another reason: no longer a candidate, drained, or the
   * group closed.
   */
  default void released(String group, String key) {}

  /** This process lost {@code key} (see {@link GroupCallbacks#onLost}). */
  default void lost(String group, String key) {}
}
