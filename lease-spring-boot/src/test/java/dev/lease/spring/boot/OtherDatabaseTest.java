package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Primary;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * An application with a second DataSource on another database (a SQLite file here, say a reporting
 * database) and {@code lease.fencing.enabled=true}: the starter fences only the DataSource of the
 * lease database, so a {@code @Leased} method's transactions commit on both databases, the lease
 * database's verified. Negative control: the first version's rule (every DataSource bean fenced)
 * makes the other database refuse every transaction under a lease, since the lease table it would
 * verify against is not there. Listing the other database's bean in {@code
 * lease.fencing.data-sources} stops the context at start with a message that names the bean and
 * what to do; a second pool on the lease database listed there is fenced and its transactions
 * verify.
 */
class OtherDatabaseTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(FirstVersionRule.class)
  static class App {
    /** The lease database: the primary DataSource, which the LeaseManager uses. */
    @Bean
    @Primary
    HikariDataSource dataSource(@Value("${app.url}") String url) {
      return pool(url);
    }

    /** Another database: its transactions can never be verified against the lease table. */
    @Bean
    HikariDataSource reportDataSource(@Value("${app.report-url}") String url) {
      return pool(url);
    }

    /** A second pool on the lease database. */
    @Bean
    HikariDataSource batchDataSource(@Value("${app.url}") String url) {
      return pool(url);
    }

    @Bean
    Writer writer() {
      return new Writer();
    }

    private static HikariDataSource pool(String url) {
      HikariDataSource ds = new HikariDataSource();
      ds.setJdbcUrl(url);
      ds.setMaximumPoolSize(3);
      ds.setMinimumIdle(0);
      return ds;
    }
  }

  /** What the first version did with lease.fencing.enabled=true: fence every DataSource bean. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(name = "app.first-version-rule", havingValue = "true")
  static class FirstVersionRule {
    @Bean
    static BeanPostProcessor fenceEveryDataSource(Environment environment) {
      return new BeanPostProcessor() {
        @Override
        public Object postProcessAfterInitialization(Object bean, String name) {
          if (bean instanceof DataSource ds && !(bean instanceof FencedDataSource)) {
            return FencedDataSource.wrap(
                ds,
                Binder.get(environment)
                    .bind("lease.fencing", LeaseProperties.Fencing.class)
                    .get()
                    .toOptions());
          }
          return bean;
        }
      };
    }
  }

  static class Writer {
    /** One transaction on {@code ds}, under the lease. */
    @Leased("writer")
    public void write(DataSource ds, String table, String who) {
      writeWithoutLease(ds, table, who);
    }

    /** The same transaction, no lease bound. */
    public void writeWithoutLease(DataSource ds, String table, String who) {
      new TransactionTemplate(new DataSourceTransactionManager(ds))
          .executeWithoutResult(
              s -> new JdbcTemplate(ds).update("INSERT INTO " + table + " (who) VALUES (?)", who));
    }
  }

  @OnEveryDatabase
  void onlyTheLeaseDatabaseIsFencedAndTheOtherDatabaseCommits(TestDatabase db) {
    Outcome o = scenario(db, false);
    assertEquals(List.of("lease-db", "batch"), o.leaseRows);
    assertEquals(
        List.of("unleased", "report-db"), o.reportRows, "the other database commits: " + o.failure);
    assertEquals(2.0, o.verified, "the lease database's transactions were verified (both pools)");
  }

  @OnEveryDatabase
  void negativeControlFencingEveryDataSourceRefusesTheOtherDatabase(TestDatabase db) {
    Outcome o = scenario(db, true);
    assertEquals(List.of("lease-db", "batch"), o.leaseRows);
    // the same statement commits there without a lease; under the lease its verify, run in a
    // database without this lease table (or without this row), fails and nothing commits
    assertEquals(List.of("unleased"), o.reportRows, "nothing under the lease committed there");
    assertNotNull(o.failure, "the other database's transaction under the lease failed");
    assertNotNull(find(o.failure, SQLException.class), "the fence's verify failed: " + o.failure);
  }

  private record Outcome(
      List<String> leaseRows, List<String> reportRows, RuntimeException failure, double verified) {}

  /**
   * One replica with the three DataSources: a {@code @Leased} transaction on the lease database, on
   * its second pool (listed in lease.fencing.data-sources) and on the other database.
   */
  private static Outcome scenario(TestDatabase db, boolean firstVersionRule) {
    try (Replicas replicas = new Replicas(db)) {
      String table = replicas.table("sb_written");
      Map<String, Object> p = properties(replicas);
      p.put("lease.fencing.data-sources", "batchDataSource");
      p.put("app.first-version-rule", firstVersionRule);
      ConfigurableApplicationContext ctx = replicas.start(App.class, "A", p);
      DataSource leaseDb = ctx.getBean("dataSource", DataSource.class);
      DataSource batch = ctx.getBean("batchDataSource", DataSource.class);
      DataSource reportDb = ctx.getBean("reportDataSource", DataSource.class);
      assertInstanceOf(FencedDataSource.class, leaseDb);
      assertInstanceOf(FencedDataSource.class, batch);
      assertEquals(firstVersionRule, reportDb instanceof FencedDataSource);
      for (DataSource ds : List.of(leaseDb, reportDb)) {
        new JdbcTemplate(ds).execute("CREATE TABLE " + table + " (who VARCHAR(16) NOT NULL)");
      }
      Writer writer = ctx.getBean(Writer.class);
      writer.writeWithoutLease(reportDb, table, "unleased");
      writer.write(leaseDb, table, "lease-db");
      writer.write(batch, table, "batch");
      RuntimeException failure = null;
      try {
        writer.write(reportDb, table, "report-db");
      } catch (RuntimeException e) {
        failure = e;
      }
      // the start-up check's own lease is not counted
      assertEquals(0.0, Replicas.count(ctx, "lease.claims", "lease", FencingCheck.PROBE));
      return new Outcome(
          rows(leaseDb, table),
          rows(reportDb, table),
          failure,
          Replicas.count(ctx, "lease.transactions", "lease", "writer", "outcome", "verified"));
    }
  }

  @OnEveryDatabase
  void aListedDataSourceOfAnotherDatabaseStopsTheContext(TestDatabase db) {
    try (Replicas replicas = new Replicas(db)) {
      Map<String, Object> p = properties(replicas);
      p.put("lease.fencing.data-sources", "batchDataSource,reportDataSource");
      String all =
          chain(assertThrows(RuntimeException.class, () -> replicas.start(App.class, "A", p)));
      assertTrue(all.contains("lease.fencing.data-sources"), all);
      assertTrue(all.contains("'reportDataSource' does not reach the lease database"), all);
      assertTrue(all.contains("Remove it from lease.fencing.data-sources"), all);
    }
  }

  @Test
  @DisplayName("sqlite: a listed name that is no DataSource bean stops the context")
  void aListedNameThatIsNoDataSourceStopsTheContext() {
    try (Replicas replicas = new Replicas(TestDatabase.SQLITE)) {
      Map<String, Object> p = properties(replicas);
      p.put("lease.fencing.data-sources", "reportDatasource");
      String all =
          chain(assertThrows(RuntimeException.class, () -> replicas.start(App.class, "A", p)));
      assertTrue(all.contains("there is no DataSource bean named 'reportDatasource'"), all);
    }
  }

  private static Map<String, Object> properties(Replicas replicas) {
    Map<String, Object> p = new HashMap<>();
    p.put("lease.fencing.enabled", true);
    p.put("lease.duration", "3s");
    p.put("app.url", replicas.url);
    p.put("app.report-url", TestDatabase.SQLITE.url() + "?journal_mode=WAL&busy_timeout=10000");
    return p;
  }

  private static List<String> rows(DataSource ds, String table) {
    return new JdbcTemplate(ds)
        .queryForList("SELECT who FROM " + table + " ORDER BY who DESC", String.class);
  }

  private static <T extends Throwable> T find(Throwable t, Class<T> type) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return type.cast(c);
      }
    }
    return null;
  }

  private static String chain(Throwable e) {
    StringWriter w = new StringWriter();
    e.printStackTrace(new PrintWriter(w));
    return w.toString();
  }
}
