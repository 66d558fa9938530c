package dev.lease.spring.boot;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * Spring Boot 4's health indicator {@code lease}: reports {@link LeaseHealthCheck}. Loaded only
 * when Boot 4's health types are present ({@link LeaseHealthAutoConfiguration}).
 */
final class Boot4HealthIndicator implements HealthIndicator {

  private final LeaseHealthCheck check;

  Boot4HealthIndicator(LeaseHealthCheck check) {
    this.check = check;
  }

  @Override
  public Health health() {
    LeaseHealthCheck.Result r = check.check();
    return (r.up() ? Health.up() : Health.down()).withDetails(r.details()).build();
  }
}
