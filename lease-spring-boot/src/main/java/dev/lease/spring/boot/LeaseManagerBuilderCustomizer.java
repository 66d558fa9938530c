package dev.lease.spring.boot;

import dev.lease.core.LeaseManager;

/**
 * Changes the {@link LeaseManager.Builder} of the auto-configured {@code LeaseManager} after the
 * starter applied the {@code lease.*} properties: a bean of this type is applied in {@code @Order}.
 * Use it for what properties cannot say (a scheduler or executor of your own, a failure policy with
 * behaviour of your own).
 */
@FunctionalInterface
public interface LeaseManagerBuilderCustomizer {
  void customize(LeaseManager.Builder builder);
}
