package dev.lease.spring.boot;

import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * Wraps every {@code DataSource} bean (except {@code lease.fencing.excluded-beans}) in lease-jdbc's
 * {@link FencedDataSource} once it is initialized, so everything that gets it from the context
 * (transaction managers, {@code JdbcTemplate}, JPA) uses fenced connections. The lease manager
 * unwraps it: lease SQL runs on the pool underneath.
 */
final class FencedDataSourcePostProcessor implements BeanPostProcessor, Ordered {

  private static final Logger log = LoggerFactory.getLogger(FencedDataSourcePostProcessor.class);

  private final Environment environment;
  private volatile LeaseProperties.Fencing fencing;

  FencedDataSourcePostProcessor(Environment environment) {
    this.environment = environment;
  }

  @Override
  public int getOrder() {
    // after the other post-processors, so a proxy made by one of them is what gets wrapped
    return Ordered.LOWEST_PRECEDENCE - 10;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    if (!(bean instanceof DataSource ds) || bean instanceof FencedDataSource) {
      return bean;
    }
    LeaseProperties.Fencing f = fencing();
    if (f.getExcludedBeans().contains(beanName)) {
      return bean;
    }
    FencingOptions options = f.toOptions();
    log.info("fencing DataSource bean '{}' ({})", beanName, options);
    return FencedDataSource.wrap(ds, options);
  }

  private LeaseProperties.Fencing fencing() {
    LeaseProperties.Fencing f = fencing;
    if (f == null) {
      // bound here, not injected: post-processors are made before the properties bean; the
      // LeaseProperties bean validates the same values
      f =
          Binder.get(environment)
              .bind("lease.fencing", LeaseProperties.Fencing.class)
              .orElseGet(LeaseProperties.Fencing::new);
      fencing = f;
    }
    return f;
  }
}
