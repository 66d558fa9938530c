package dev.lease.core.group;

import dev.lease.core.Lease;

/**
 * What a {@link LeaseGroup} tells the application about its keys. All three run on the group's pass
 * thread (or the thread that called {@link LeaseGroup#drain()} or {@link LeaseGroup#close()}), one
 * at a time; keep them quick, start the key's work elsewhere. What they throw is logged and
 * ignored.
 */
public interface GroupCallbacks {

  /**
   * This process now owns {@code key}: {@code lease} is an ordinary {@link Lease} with its own term
   * (the key's fencing token), kept renewed by its manager. Bind it ({@code
   * LeaseContext.bind(lease)}) or run the key's work under it ({@code manager.runUnder(lease,
   * ...)}) so that its transactions are fenced.
   */
  void onAcquired(String key, Lease lease);

  /**
   * The group is about to give {@code key} back (shed above the fair share, no longer a candidate,
   * drained, closed): stop the key's work before returning. The release statement runs only after
   * this returns; work bound with {@code manager.runUnder} is interrupted as every release does.
   */
  void onReleasing(String key);

  /**
   * {@code key} is no longer this process's and nobody asked: its lease was lost (a renewal found
   * it taken, or the local deadline passed), or its manager was closed before the group. Stop the
   * key's work at once; its fenced transactions are already refused.
   */
  void onLost(String key);
}
