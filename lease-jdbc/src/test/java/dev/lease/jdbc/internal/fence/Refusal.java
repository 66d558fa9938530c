package dev.lease.jdbc.internal.fence;

/**
 * The two refusal mechanisms the tests compare: {@link #SERVER}, the fence's ({@code
 * FenceRules.PRODUCTION}: the verify raises an error in the server, every commit carries its
 * proof), and {@link #CLIENT}, the one before issue 25 ({@link WeakenedFence#PREVIOUS_REFUSAL}).
 */
enum Refusal {
  SERVER,
  CLIENT
}
