package dev.lease.spring.boot;

import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/**
 * Spring Boot 3's health indicator {@code lease}: reports {@link LeaseHealthCheck}. Loaded only
 * when Boot 3's health types are present ({@link LeaseHealthAutoConfiguration}).
 */
final class Boot3HealthIndicator implements HealthIndicator {

  private final LeaseHealthCheck check;

  Boot3HealthIndicator(LeaseHealthCheck check) {
    this.check = check;
  }

  @Override
  public Health health() {
    LeaseHealthCheck.Result r = check.check();
    return (r.up() ? Health.up() : Health.down()).withDetails(r.details()).build();
  }
}
