package dev.lease.core;

/**
 * A negative control's weakened rules ({@link WeakenedLifecycle}, {@link WeakenedSql}), applied to
 * a manager's builder through the gated hooks.
 */
public interface Weakening {

  LeaseManager.Builder applyTo(LeaseManager.Builder builder);

  /** {@code builder} weakened by {@code fault}, or as it is when there is none (null). */
  static LeaseManager.Builder apply(Weakening fault, LeaseManager.Builder builder) {
    return fault == null ? builder : fault.applyTo(builder);
  }
}
