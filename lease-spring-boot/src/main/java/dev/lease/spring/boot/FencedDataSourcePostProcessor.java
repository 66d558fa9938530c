package dev.lease.spring.boot;

import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * Wraps the DataSource beans of the lease database in lease-jdbc's {@link FencedDataSource} once
 * they are initialized, so everything that gets them from the context (transaction managers, {@code
 * JdbcTemplate}, JPA) uses fenced connections: the DataSource the starter's {@code LeaseManager}
 * uses (the only DataSource bean, or the {@code @Primary} one), and the beans named in {@code
 * lease.fencing.data-sources}. No other: a transaction can only be verified in the database that
 * holds the lease table, so a fenced DataSource of another database would refuse every transaction
 * under a lease. {@link FencingCheck} checks at start that each wrapped DataSource reaches the
 * lease database. The lease manager unwraps its DataSource: lease SQL runs on the pool underneath.
 */
final class FencedDataSourcePostProcessor implements BeanPostProcessor, BeanFactoryAware, Ordered {

  private static final Logger log = LoggerFactory.getLogger(FencedDataSourcePostProcessor.class);

  private final Environment environment;
  private ConfigurableListableBeanFactory beanFactory;
  private volatile LeaseProperties.Fencing fencing;
  private volatile String leaseDataSource;
  private final Map<String, FencedDataSource> fenced = new LinkedHashMap<>();

  FencedDataSourcePostProcessor(Environment environment) {
    this.environment = environment;
  }

  @Override
  public void setBeanFactory(BeanFactory beanFactory) {
    this.beanFactory = (ConfigurableListableBeanFactory) beanFactory;
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
    String why;
    if (beanName.equals(leaseDataSource())) {
      why = "the lease database's DataSource";
    } else if (listed(beanName)) {
      why = "listed in lease.fencing.data-sources";
    } else {
      log.debug("not fencing DataSource bean '{}': not the lease database's DataSource", beanName);
      return bean;
    }
    FencingOptions options = fencing().toOptions();
    log.info("fencing DataSource bean '{}' ({}; {})", beanName, why, options);
    FencedDataSource wrapped = FencedDataSource.wrap(ds, options);
    synchronized (fenced) {
      fenced.put(beanName, wrapped);
    }
    return wrapped;
  }

  /** The DataSource beans wrapped so far, by bean name, in the order they were. */
  Map<String, FencedDataSource> fenced() {
    synchronized (fenced) {
      return new LinkedHashMap<>(fenced);
    }
  }

  /**
   * The bean name of the DataSource the starter's LeaseManager uses: the only DataSource bean, or
   * the primary one (the candidate {@code @ConditionalOnSingleCandidate} and autowiring choose).
   */
  String leaseDataSource() {
    String name = leaseDataSource;
    if (name == null) {
      name = leaseDataSource(beanFactory);
      leaseDataSource = name;
    }
    return name;
  }

  /** {@link #leaseDataSource()} of {@code beanFactory}; empty when no single one is chosen. */
  static String leaseDataSource(ConfigurableListableBeanFactory beanFactory) {
    String[] names = beanFactory.getBeanNamesForType(DataSource.class, true, false);
    if (names.length == 1) {
      return names[0];
    }
    List<String> primary = new ArrayList<>();
    for (String n : names) {
      if (beanFactory.containsBeanDefinition(n) && beanFactory.getBeanDefinition(n).isPrimary()) {
        primary.add(n);
      }
    }
    return primary.size() == 1 ? primary.get(0) : "";
  }

  /** True if {@code lease.fencing.data-sources} names the bean (or one of its aliases). */
  boolean listed(String beanName) {
    List<String> listed = fencing().getDataSources();
    return listed.contains(beanName)
        || Arrays.stream(beanFactory.getAliases(beanName)).anyMatch(listed::contains);
  }

  LeaseProperties.Fencing fencing() {
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
