package dev.lease.spring.boot.boot3;

import dev.lease.spring.boot.LeaseHealthCheck;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/** Spring Boot 3's health indicator {@code lease}: reports {@link LeaseHealthCheck}. */
public final class LeaseHealthIndicator implements HealthIndicator {

  private final LeaseHealthCheck check;

  public LeaseHealthIndicator(LeaseHealthCheck check) {
    this.check = check;
  }

  @Override
  public Health health() {
    LeaseHealthCheck.Result r = check.check();
    return (r.up() ? Health.up() : Health.down()).withDetails(r.details()).build();
  }
}
