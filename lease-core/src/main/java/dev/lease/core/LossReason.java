package dev.lease.core;

/** Why a holder gave its lease up. */
public enum LossReason {
  /** No renewal succeeded within the local deadline (the database may be unreachable). */
  LOCAL_DEADLINE,
  /** The database says the lease is no longer this holder's (it expired, or another claimed it). */
  NOT_HELD
}
