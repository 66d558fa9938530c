package dev.lease.spring.boot;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The health indicator {@code lease}, in the health types of the Spring Boot line that runs: Boot 3
 * has them in {@code org.springframework.boot.actuate.health}, Boot 4 in {@code
 * org.springframework.boot.health.contributor}. Each nested configuration is read only when its
 * line's types are present.
 */
@AutoConfiguration(after = LeaseAutoConfiguration.class)
@ConditionalOnBean(LeaseHealthCheck.class)
@ConditionalOnProperty(
    prefix = "management.health.lease",
    name = "enabled",
    havingValue = "true",
    matchIfMissing = true)
public class LeaseHealthAutoConfiguration {

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
  static class Boot3 {
    @Bean
    @ConditionalOnMissingBean(name = "leaseHealthIndicator")
    Boot3HealthIndicator leaseHealthIndicator(LeaseHealthCheck check) {
      return new Boot3HealthIndicator(check);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  static class Boot4 {
    @Bean
    @ConditionalOnMissingBean(name = "leaseHealthIndicator")
    Boot4HealthIndicator leaseHealthIndicator(LeaseHealthCheck check) {
      return new Boot4HealthIndicator(check);
    }
  }
}
