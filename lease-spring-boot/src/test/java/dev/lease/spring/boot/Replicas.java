package dev.lease.spring.boot;

import dev.lease.testing.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.search.RequiredSearch;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Starts the application contexts of the tests ("replicas") on one test database: real Spring Boot
 * applications with the starter, their DataSource from {@code spring.datasource.url}.
 */
final class Replicas implements AutoCloseable {

  /** The JPA auto-configurations of both Spring Boot lines: off unless a test wants JPA. */
  static final String NO_JPA =
      String.join(
          ",",
          "org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration",
          "org.springframework.boot.autoconfigure.data.jpa.JpaRepositoriesAutoConfiguration",
          "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
          "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration");

  final TestDatabase db;
  final String url;
  final String table;
  private final List<ConfigurableApplicationContext> started = new ArrayList<>();
  private final List<String> extraTables = new ArrayList<>();

  Replicas(TestDatabase db) {
    this.db = db;
    this.url = db.isSqlite() ? db.url() + "?journal_mode=WAL&busy_timeout=10000" : db.url();
    this.table = TestDatabase.uniqueTable("sb_leases");
  }

  /** The properties every replica of a test shares. */
  Map<String, Object> common() {
    Map<String, Object> p = new HashMap<>();
    p.put("spring.main.web-application-type", "none");
    p.put("spring.main.banner-mode", "off");
    p.put("spring.datasource.url", url);
    p.put("spring.datasource.hikari.maximum-pool-size", 4);
    p.put("spring.datasource.hikari.minimum-idle", 0);
    p.put("spring.autoconfigure.exclude", NO_JPA);
    p.put("spring.jmx.enabled", false);
    p.put("lease.table", table);
    p.put("lease.create-table", true);
    p.put("lease.failure-policy", "log-only");
    return p;
  }

  /** Starts a replica of {@code app} named {@code instance} with {@code properties} on top. */
  ConfigurableApplicationContext start(
      Class<?> app, String instance, Map<String, Object> properties) {
    Map<String, Object> p = common();
    p.put("lease.instance", instance);
    p.putAll(properties);
    return run(app, p);
  }

  /** Starts an application with exactly {@code properties} (and the test's web and banner off). */
  ConfigurableApplicationContext builderStart(Class<?> app, Map<String, Object> properties) {
    Map<String, Object> p = new HashMap<>(properties);
    p.put("spring.main.web-application-type", "none");
    return runQuietly(app, p);
  }

  /**
   * Starts a web application with exactly {@code properties} (banner off): a real server, on the
   * port {@code server.port} says (0: a free one).
   */
  ConfigurableApplicationContext webStart(Class<?> app, Map<String, Object> properties) {
    return runQuietly(app, new HashMap<>(properties));
  }

  /** Runs {@code app} with {@code p} (changed here: banner off, no JPA auto-configuration). */
  private ConfigurableApplicationContext runQuietly(Class<?> app, Map<String, Object> p) {
    p.put("spring.main.banner-mode", "off");
    p.put("spring.autoconfigure.exclude", NO_JPA);
    return run(app, p);
  }

  /** Runs {@code app} with {@code properties}; closed with this object. */
  private ConfigurableApplicationContext run(Class<?> app, Map<String, Object> properties) {
    ConfigurableApplicationContext ctx = builder(app, properties).run();
    started.add(ctx);
    return ctx;
  }

  static SpringApplicationBuilder builder(Class<?> app, Map<String, Object> properties) {
    SpringApplicationBuilder b = new SpringApplicationBuilder(app).properties(properties);
    b.application().setRegisterShutdownHook(false);
    return b;
  }

  @Override
  public void close() {
    for (ConfigurableApplicationContext ctx : started) {
      if (ctx.isActive()) {
        SpringApplication.exit(ctx);
      }
    }
    if (!db.isSqlite()) { // a SQLite test database is a temporary file
      List<String> tables = new ArrayList<>(extraTables);
      tables.add(table);
      TestDatabase.dropQuietly(db.unpooled(), tables.toArray(new String[0]));
    }
  }

  /** A table of the test's own, dropped at the end. */
  String table(String prefix) {
    String t = TestDatabase.uniqueTable(prefix);
    extraTables.add(t);
    return t;
  }

  // ---- what the tests read from a replica -------------------------------------------------------

  /** The count of counter {@code name} with {@code tags}, 0 if it was never incremented. */
  static double count(ConfigurableApplicationContext ctx, String name, String... tags) {
    return count(ctx.getBean(MeterRegistry.class), name, tags);
  }

  /** The count of counter {@code name} with {@code tags} in {@code registry}. */
  static double count(MeterRegistry registry, String name, String... tags) {
    RequiredSearch search = registry.get(name);
    try {
      return search.tags(tags).counters().stream().mapToDouble(c -> c.count()).sum();
    } catch (io.micrometer.core.instrument.search.MeterNotFoundException e) {
      return 0;
    }
  }

  /** Every meter of {@code ctx}'s registry with its value, for failure messages. */
  static String meters(ConfigurableApplicationContext ctx) {
    return meters(ctx.getBean(MeterRegistry.class));
  }

  static String meters(MeterRegistry registry) {
    StringBuilder b = new StringBuilder();
    registry.getMeters().stream()
        .filter(m -> m.getId().getName().startsWith("lease."))
        .forEach(
            m -> {
              b.append(m.getId().getName()).append(m.getId().getTags()).append(" =");
              m.measure().forEach(ms -> b.append(' ').append(ms.getValue()));
              b.append('\n');
            });
    return b.toString();
  }

  /** The value of gauge {@code name} with {@code tags}. */
  static double gauge(ConfigurableApplicationContext ctx, String name, String... tags) {
    return ctx.getBean(MeterRegistry.class).get(name).tags(tags).gauge().value();
  }

  /**
   * The status code ("UP", "DOWN") and details of the health indicator {@code lease}, whichever
   * Spring Boot line's health types it uses.
   */
  @SuppressWarnings("unchecked")
  static Map<String, Object> health(ConfigurableApplicationContext ctx) throws Exception {
    Object indicator = ctx.getBean("leaseHealthIndicator");
    Method health = indicator.getClass().getMethod("health");
    Object h = health.invoke(indicator);
    Object status = h.getClass().getMethod("getStatus").invoke(h);
    Map<String, Object> out =
        new HashMap<>((Map<String, Object>) h.getClass().getMethod("getDetails").invoke(h));
    out.put("status", status.getClass().getMethod("getCode").invoke(status));
    return out;
  }
}
