package dev.lease.core;

import java.util.Objects;
import java.util.Optional;

/**
 * Whether a {@link LeaseManager}'s database can hold leases now ({@link LeaseManager#available()}),
 * and if not, why: for health checks and readiness probes.
 */
public final class Availability {

  private static final Availability YES = new Availability(null);

  private final String reason;

  private Availability(String reason) {
    this.reason = reason;
  }

  static Availability yes() {
    return YES;
  }

  static Availability no(String reason) {
    return new Availability(Objects.requireNonNull(reason, "reason"));
  }

  /** True if the database answered within the attempt timeout and the lease table is usable. */
  public boolean isAvailable() {
    return reason == null;
  }

  /** Why leases cannot be held now, and what to do; empty when they can. */
  public Optional<String> reason() {
    return Optional.ofNullable(reason);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Availability a && Objects.equals(reason, a.reason);
  }

  @Override
  public int hashCode() {
    return Objects.hashCode(reason);
  }

  @Override
  public String toString() {
    return reason == null ? "available" : "unavailable: " + reason;
  }
}
