package dev.lease.core;

/** Why a holder gave its lease up. */
public enum LossReason {
  /**
   * No renewal succeeded within the local deadline (the database may be unreachable), or none can
   * any more (the keeper's scheduler was shut down).
   */
  LOCAL_DEADLINE,
  /** The database says the lease is no longer this holder's (it expired, or another claimed it). */
  NOT_HELD,
  /**
   * A fenced transaction (lease-jdbc) found the lease gone: the database refused its verify or its
   * commit because another holder took the lease over or it expired. Every later transaction under
   * the lease is then refused locally, without a round trip.
   */
  DATABASE
}
