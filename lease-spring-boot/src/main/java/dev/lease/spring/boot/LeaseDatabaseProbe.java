package dev.lease.spring.boot;

import dev.lease.core.LeaseException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * Opens one connection of the lease database's DataSource as soon as the bean is made, within
 * {@code lease.connect-timeout} (issue 40 item 8). The first connection of a start-up is often not
 * the starter's: Spring Boot 4's Hibernate auto-configuration asks the database whether it is
 * embedded before the lease manager exists, and pgjdbc, whose {@code loginTimeout} defaults to
 * none, would then wait for good on a database that accepts connections and never answers. Probed
 * here, every start-up step that reaches the lease database meets a database that answered, or
 * start-up fails naming the property. Ordered after the fencing post-processor, so the DataSource
 * probed is the one the application gets (a wrong wiring fails here too).
 */
final class LeaseDatabaseProbe implements BeanPostProcessor, BeanFactoryAware, Ordered {

  /** lease-jdbc's refusal of a FencedDataSource over a pool that is fenced itself. */
  private static final String FENCE_ONCE = "55000";

  private final Environment environment;
  private ConfigurableListableBeanFactory beanFactory;

  LeaseDatabaseProbe(Environment environment) {
    this.environment = environment;
  }

  @Override
  public void setBeanFactory(BeanFactory beanFactory) {
    this.beanFactory = (ConfigurableListableBeanFactory) beanFactory;
  }

  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE - 5; // after FencedDataSourcePostProcessor's - 10
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    if (bean instanceof DataSource ds
        && beanName.equals(FencedDataSourcePostProcessor.leaseDataSource(beanFactory))) {
      Duration timeout =
          Binder.get(environment)
              .bind("lease.connect-timeout", Duration.class)
              .orElse(Duration.ofSeconds(30));
      probe(ds, beanName, timeout);
    }
    return bean;
  }

  /**
   * Opens and closes one connection of {@code ds} on a daemon thread, waiting at most {@code
   * timeout}. A thread stuck in a driver's socket read is left behind (an interrupt does not end
   * it); start-up fails either way.
   */
  static void probe(DataSource ds, String beanName, Duration timeout) {
    FutureTask<Void> open =
        new FutureTask<>(
            () -> {
              try (Connection c = ds.getConnection()) {
                return null;
              }
            });
    Thread t = new Thread(open, "lease-database-probe");
    t.setDaemon(true);
    t.start();
    try {
      open.get(Math.max(1, timeout.toMillis()), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      open.cancel(true);
      throw new LeaseException(
          "the lease database (DataSource bean '"
              + beanName
              + "') did not answer within lease.connect-timeout="
              + timeout.toMillis()
              + "ms at start-up: check that the database is up and answering at the DataSource's"
              + " URL; give its driver a login or socket timeout (pgjdbc: loginTimeout,"
              + " socketTimeout; MySQL/MariaDB: connectTimeout, socketTimeout), or raise"
              + " lease.connect-timeout if it is only slow");
    } catch (InterruptedException e) {
      open.cancel(true);
      Thread.currentThread().interrupt();
      throw new LeaseException("interrupted while the lease database was probed", e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof SQLException sql) {
        throw new LeaseException(
            "the lease database's DataSource (bean '"
                + beanName
                + "') could not open a connection at start-up: "
                + sql.getMessage()
                + (FENCE_ONCE.equals(sql.getSQLState())
                    ? ""
                    : "; check that the database is running and that the DataSource's URL, user"
                        + " and password are right"),
            sql);
      }
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      throw new LeaseException("the lease database could not be probed: " + cause, cause);
    }
  }
}
