package dev.lease.spring.boot;

import dev.lease.core.Database;
import dev.lease.core.FailurePolicy;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseManager;
import dev.lease.jdbc.FencedDataSource;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * The starter: with a {@code DataSource} bean, a {@link LeaseManager} on it from {@code lease.*};
 * with {@code lease.fencing.enabled=true} that DataSource bean fenced (and those named in {@code
 * lease.fencing.data-sources}), checked at start; {@link Leased} and {@link LeaseScheduled}
 * methods; at shutdown the scheduler closed, then the manager; Micrometer meters and actuator parts
 * when those are present.
 *
 * <p>Spring Boot 3 and 4 keep {@code DataSourceAutoConfiguration} in different packages, so it is
 * named, not referenced.
 */
@AutoConfiguration(
    afterName = {
      "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
      "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration"
    })
@ConditionalOnClass(LeaseManager.class)
@ConditionalOnProperty(prefix = "lease", name = "enabled", matchIfMissing = true)
@ConditionalOnSingleCandidate(DataSource.class)
@EnableConfigurationProperties(LeaseProperties.class)
@Import(LeaseAutoProxyRegistrar.class)
public class LeaseAutoConfiguration {

  /**
   * Outside {@code @Transactional} (whose advisor has the lowest precedence): the lease is bound
   * before a transaction begins and released after it ended.
   */
  static final int LEASED_ADVISOR_ORDER = Ordered.LOWEST_PRECEDENCE - 1000;

  @Bean
  @ConditionalOnProperty(prefix = "lease.fencing", name = "enabled", havingValue = "true")
  static FencedDataSourcePostProcessor leaseFencedDataSourcePostProcessor(Environment environment) {
    return new FencedDataSourcePostProcessor(environment);
  }

  @Bean
  static LeaseDatabaseProbe leaseDatabaseProbe(Environment environment) {
    return new LeaseDatabaseProbe(environment);
  }

  @Bean
  @ConditionalOnProperty(prefix = "lease.fencing", name = "enabled", havingValue = "true")
  FencingCheck leaseFencingCheck(
      FencedDataSourcePostProcessor fencer,
      ObjectProvider<LeaseManager> manager,
      ConfigurableListableBeanFactory beanFactory) {
    return new FencingCheck(fencer, manager::getObject, beanFactory);
  }

  @Bean
  @ConditionalOnMissingBean
  LeasesInUse leasesInUse() {
    return new LeasesInUse();
  }

  @Bean
  LeaseShutdown leaseShutdown(ConfigurableListableBeanFactory beanFactory) {
    return new LeaseShutdown(beanFactory);
  }

  @Bean
  @ConditionalOnMissingBean
  FailurePolicy leaseFailurePolicy(LeaseProperties properties) {
    return properties.getFailurePolicy() == LeaseProperties.FailurePolicyChoice.LOG_ONLY
        ? FailurePolicy.logOnly()
        : FailurePolicy.haltProcess();
  }

  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  LeaseManager leaseManager(
      LeaseProperties properties,
      DataSource dataSource,
      FailurePolicy failurePolicy,
      ObjectProvider<LeaseListener> listeners,
      ObjectProvider<LeaseManagerBuilderCustomizer> customizers) {
    LeaseManager.Builder b =
        LeaseManager.builder(unfenced(dataSource))
            .table(properties.getTable())
            .timings(properties.toTimings())
            .failurePolicy(failurePolicy);
    if (properties.getInstance() != null && !properties.getInstance().isBlank()) {
      b.instance(properties.getInstance());
    }
    if (properties.isCreateTable()) {
      b.createTableIfMissing();
    }
    listeners.orderedStream().forEach(b::listener);
    customizers.orderedStream().forEach(c -> c.customize(b));
    try {
      return buildWithin(b, properties.getConnectTimeout(), properties.getTable());
    } catch (IllegalArgumentException e) {
      String message = e.getMessage() == null ? "" : e.getMessage();
      if (message.contains("LeaseManager.builder")) {
        // a fenced DataSource or a pool over a jdbc:fenced: URL (issue 40 item 3)
        throw new LeaseException(
            "the lease database's DataSource is fenced: with the starter, give"
                + " spring.datasource.url the plain jdbc: URL and set lease.fencing.enabled=true"
                + " (the starter fences the application's connections and runs lease SQL"
                + " unfenced); "
                + message,
            e);
      }
      if (message.startsWith("instance")) {
        throw new InvalidConfigurationPropertyValueException(
            "lease.instance", properties.getInstance(), message);
      }
      throw new InvalidConfigurationPropertyValueException(
          "lease.table", properties.getTable(), message);
    } catch (LeaseException e) {
      LeaseException missing = missingTable(properties.getTable(), e);
      if (missing != null) {
        throw missing;
      }
      throw new LeaseException(
          "the lease database cannot be used (lease.table="
              + properties.getTable()
              + ", lease.create-table="
              + properties.isCreateTable()
              + "): "
              + e.getMessage(),
          e);
    }
  }

  /**
   * lease-core's missing-table failure told in the starter's terms (a property, or the DDL), not in
   * the builder's ({@code createTableIfMissing()}); null for any other failure. Its cause is the
   * database's error, so the builder's advice is nowhere in what a Spring user reads.
   */
  static LeaseException missingTable(String table, LeaseException e) {
    String message = e.getMessage() == null ? "" : e.getMessage();
    int at = message.indexOf("LeaseManager.ddl(Database.");
    if (!message.startsWith("lease table ") || !message.contains(" does not exist ") || at < 0) {
      return null;
    }
    String product = message.substring(at + "LeaseManager.ddl(Database.".length());
    product = product.substring(0, Math.max(0, product.indexOf(',')));
    String ddl;
    try {
      ddl = String.join(";\n", LeaseManager.ddl(Database.valueOf(product), table)) + ";";
    } catch (IllegalArgumentException unknown) {
      ddl = "(see LeaseManager.ddl)";
    }
    return new LeaseException(
        message.substring(0, message.indexOf(" database; ") + " database".length())
            + ": set lease.create-table=true to create it at start, or create it in your"
            + " migrations (Flyway, Liquibase) with:\n"
            + ddl,
        e.getCause() != null ? e.getCause() : e);
  }

  /**
   * Builds the manager (connect, detect the database, check or create the table) on a thread of its
   * own, waiting at most {@code timeout}: a database that accepts TCP but never answers (a driver
   * without a socket or login timeout) would otherwise hang start-up for good. The stuck thread is
   * interrupted and left behind (a daemon: a blocked socket read does not end on an interrupt).
   */
  static LeaseManager buildWithin(LeaseManager.Builder b, Duration timeout, String table) {
    java.util.concurrent.FutureTask<LeaseManager> build =
        new java.util.concurrent.FutureTask<>(b::build);
    Thread t = new Thread(build, "lease-manager-start");
    t.setDaemon(true);
    t.start();
    try {
      return build.get(timeout.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      build.cancel(true);
      throw new LeaseException(
          "the lease database did not answer within lease.connect-timeout="
              + timeout.toMillis()
              + "ms while the lease manager started (connecting, detecting the database, checking"
              + " lease table "
              + table
              + "): check that the DataSource's database is up and answering; give its driver a"
              + " connect and socket timeout (PostgreSQL: connectTimeout, socketTimeout;"
              + " MySQL/MariaDB: connectTimeout, socketTimeout), or raise lease.connect-timeout if"
              + " it is only slow");
    } catch (InterruptedException e) {
      build.cancel(true);
      Thread.currentThread().interrupt();
      throw new LeaseException("interrupted while the lease manager started", e);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new LeaseException("the lease manager could not start: " + cause, cause);
    }
  }

  /** The pool under a fenced DataSource: lease SQL must never be fenced itself. */
  static DataSource unfenced(DataSource dataSource) {
    try {
      if (dataSource.isWrapperFor(FencedDataSource.class)) {
        return dataSource.unwrap(FencedDataSource.class).target();
      }
    } catch (SQLException e) {
      // not a wrapper that can tell: use it as it is
    }
    return dataSource;
  }

  @Bean
  @ConditionalOnMissingBean
  LeasedMethodInterceptor leasedMethodInterceptor(
      ObjectProvider<LeaseManager> manager,
      Environment environment,
      BeanFactory beanFactory,
      LeasesInUse inUse,
      ObjectProvider<LeasedCallListener> callListeners,
      ObjectProvider<FencedDataSourcePostProcessor> fencer) {
    return new LeasedMethodInterceptor(
        manager::getObject,
        new LeaseNameResolver(environment, beanFactory),
        inUse,
        new CachedList<>(callListeners),
        () -> {
          FencedDataSourcePostProcessor f = fencer.getIfAvailable();
          return f != null && !f.fenced().isEmpty();
        });
  }

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static Advisor leasedMethodAdvisor(ObjectProvider<LeasedMethodInterceptor> interceptor) {
    DefaultPointcutAdvisor advisor =
        new DefaultPointcutAdvisor(
            AnnotationMatchingPointcut.forMethodAnnotation(Leased.class),
            new LazyInterceptor(interceptor));
    advisor.setOrder(LEASED_ADVISOR_ORDER);
    return advisor;
  }

  @Bean
  static LeaseScheduledMethods leaseScheduledMethods(
      Environment environment,
      BeanFactory beanFactory,
      ObjectProvider<LeaseManager> manager,
      ObjectProvider<LeaseProperties> properties,
      ObjectProvider<LeasesInUse> inUse) {
    return new LeaseScheduledMethods(
        environment, beanFactory, manager::getObject, properties::getObject, inUse::getObject);
  }

  @Bean
  @ConditionalOnMissingBean
  LeaseHealthCheck leaseHealthCheck(ObjectProvider<LeaseManager> manager, LeasesInUse inUse) {
    return new LeaseHealthCheck(manager::getObject, inUse);
  }

  /** Meters, when Micrometer is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.micrometer.core.instrument.binder.MeterBinder")
  @ConditionalOnProperty(
      prefix = "lease.metrics",
      name = "enabled",
      havingValue = "true",
      matchIfMissing = true)
  static class Metrics {
    @Bean
    @ConditionalOnMissingBean
    LeaseMetrics leaseMetrics(LeaseProperties properties) {
      return new LeaseMetrics(properties.getMetrics().isLeaseTag());
    }

    /** Once every bean is made, the jobs are known: their counters at zero from the start. */
    @Bean
    SmartInitializingSingleton leaseMetricsJobs(
        ObjectProvider<LeaseMetrics> metrics, LeaseScheduledMethods jobs) {
      return () -> metrics.ifAvailable(m -> m.jobs(jobs.jobs().keySet()));
    }
  }

  /** A lost lease as {@link LeaseLostDataAccessException}, when spring-jdbc is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.jdbc.support.JdbcTransactionManager")
  static class Translation {
    @Bean
    static LeaseLostTranslation leaseLostTranslation() {
      return new LeaseLostTranslation();
    }

    @Bean
    @ConditionalOnMissingBean
    LeaseLostTranslation.Persistence leaseLostPersistenceExceptionTranslator() {
      return new LeaseLostTranslation.Persistence();
    }
  }

  /** The {@code leases} endpoint, when the actuator is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
  static class Endpoint {
    @Bean
    @ConditionalOnMissingBean
    LeasesEndpoint leasesEndpoint(
        ObjectProvider<LeaseManager> manager, LeaseScheduledMethods jobs) {
      return new LeasesEndpoint(manager::getObject, jobs::jobs);
    }
  }

  /** Resolves the call listeners once, at the first call (after the context is built). */
  private static final class CachedList<T> implements java.util.function.Supplier<List<T>> {
    private final ObjectProvider<T> provider;
    private volatile List<T> list;

    CachedList(ObjectProvider<T> provider) {
      this.provider = provider;
    }

    @Override
    public List<T> get() {
      List<T> l = list;
      if (l == null) {
        l = provider.orderedStream().toList();
        list = l;
      }
      return l;
    }
  }

  /**
   * The advisor is created early (with the other advisors), the interceptor and its lease manager
   * only at the first call.
   */
  private static final class LazyInterceptor
      implements org.aopalliance.intercept.MethodInterceptor {
    private final ObjectProvider<LeasedMethodInterceptor> interceptor;

    LazyInterceptor(ObjectProvider<LeasedMethodInterceptor> interceptor) {
      this.interceptor = interceptor;
    }

    @Override
    public Object invoke(org.aopalliance.intercept.MethodInvocation invocation) throws Throwable {
      return interceptor.getObject().invoke(invocation);
    }
  }
}
