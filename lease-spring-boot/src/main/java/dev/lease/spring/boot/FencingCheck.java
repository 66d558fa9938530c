package dev.lease.spring.boot;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.jdbc.FencedDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * Checks at start, once every singleton is made, that each DataSource the starter fenced reaches
 * the lease database: under a lease of its own ({@value #PROBE}, held for a moment) it runs a
 * transaction through the fenced DataSource, whose verify must succeed. The verify finds this
 * claim's row (its holder token is random, never reused) only in the database of the LeaseManager's
 * lease table; through a DataSource of another database it fails, and then no transaction under a
 * lease could commit there. The context then stops with a message naming the bean and what to do.
 * It also catches a fenced DataSource whose user may not read the lease table.
 */
final class FencingCheck implements SmartInitializingSingleton {

  private static final Logger log = LoggerFactory.getLogger(FencingCheck.class);

  /** The lease the check claims for a moment (its row stays in the lease table, as every row). */
  static final String PROBE = "lease-spring-boot.fencing-check";

  private final FencedDataSourcePostProcessor fencer;
  private final Supplier<LeaseManager> manager;
  private final ConfigurableListableBeanFactory beanFactory;

  FencingCheck(
      FencedDataSourcePostProcessor fencer,
      Supplier<LeaseManager> manager,
      ConfigurableListableBeanFactory beanFactory) {
    this.fencer = fencer;
    this.manager = manager;
    this.beanFactory = beanFactory;
  }

  @Override
  public void afterSingletonsInstantiated() {
    checkListedNames();
    LeaseManager m = manager.get(); // made now if lazy: its DataSource is then wrapped too
    Map<String, FencedDataSource> fenced = fencer.fenced();
    if (fenced.isEmpty()) {
      return;
    }
    Lease probe = claim(m);
    try (LeaseContext.Scope scope = LeaseContext.bind(probe)) {
      for (Map.Entry<String, FencedDataSource> e : fenced.entrySet()) {
        Optional<String> problem = verifyThrough(e.getValue());
        if (problem.isPresent()) {
          throw refusal(m, e.getKey(), problem.get());
        }
        log.debug("fenced DataSource bean '{}' reaches the lease database", e.getKey());
      }
    } finally {
      try {
        probe.release();
      } catch (LeaseException e) {
        log.warn("could not release {}; it expires by itself: {}", probe, e.getMessage());
      }
    }
  }

  /** Every name in lease.fencing.data-sources is a DataSource bean (or an alias of one). */
  private void checkListedNames() {
    List<String> names = new ArrayList<>();
    for (String n : beanFactory.getBeanNamesForType(DataSource.class, true, false)) {
      names.add(n);
      names.addAll(Arrays.asList(beanFactory.getAliases(n)));
    }
    for (String listed : fencer.fencing().getDataSources()) {
      if (!names.contains(listed)) {
        throw new InvalidConfigurationPropertyValueException(
            "lease.fencing.data-sources",
            listed,
            "there is no DataSource bean named '"
                + listed
                + "'; the DataSource beans are "
                + names);
      }
    }
  }

  /**
   * Claims the check's lease; another replica starting at the same moment holds it for a few
   * milliseconds, a replica that died while checking until it expires.
   */
  private static Lease claim(LeaseManager m) {
    Duration patience =
        m.timings().leaseDuration().plus(m.timings().attemptTimeout().multipliedBy(2));
    long deadline = System.nanoTime() + patience.toNanos();
    while (true) {
      Optional<Lease> claimed = m.tryClaim(PROBE);
      if (claimed.isPresent()) {
        return claimed.get();
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(
            "could not claim the lease "
                + PROBE
                + " to check the fenced DataSources within "
                + patience.toMillis()
                + " ms: another replica holds it");
      }
      try {
        Thread.sleep(25); // the wait of a claimer: another replica checks right now
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while checking the fenced DataSources", e);
      }
    }
  }

  /** Runs one transaction under the bound lease; empty if the fence verified it. */
  private static Optional<String> verifyThrough(DataSource fenced) {
    try (Connection c = fenced.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1"); // the fence verifies the lease first, in this transaction
      } finally {
        c.rollback();
        c.setAutoCommit(autoCommit);
      }
      return Optional.empty();
    } catch (SQLException e) {
      return Optional.of(e.getMessage());
    }
  }

  private RuntimeException refusal(LeaseManager m, String bean, String problem) {
    String what =
        "DataSource bean '"
            + bean
            + "' does not reach the lease database: a transaction under a lease through it could"
            + " not be verified ("
            + problem
            + "). A fenced transaction is verified against the lease table "
            + m.table()
            + " in the LeaseManager's database ("
            + m.databaseProduct()
            + "), so through a DataSource of another database no transaction under a lease can"
            + " commit.";
    if (fencer.listed(bean)) {
      return new InvalidConfigurationPropertyValueException(
          "lease.fencing.data-sources",
          bean,
          what
              + " Remove it from lease.fencing.data-sources (its transactions then run unfenced: a"
              + " lease fences only the database that holds its lease table).");
    }
    return new IllegalStateException(
        what
            + " Build the LeaseManager on this DataSource's database (the lease table must live in"
            + " the database the fenced transactions write to), or set"
            + " lease.fencing.enabled=false.");
  }
}
