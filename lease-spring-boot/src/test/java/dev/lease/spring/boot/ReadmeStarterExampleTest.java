package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * Keeps the README's "Spring Boot" section true: its properties are {@code
 * readme-application.properties} and its class is {@link Billing} below, character for character
 * (checked); the application runs with them on SQLite.
 */
class ReadmeStarterExampleTest {

  // spotless:off
  // README-BEGIN
  @Component
  public static class Billing {
    private final JdbcTemplate jdbc;

    public Billing(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    // once across replicas at a time: skipped (returns null) while another replica runs it;
    // its transaction is refused if the lease was lost
    @Leased("nightly-billing")
    @Transactional
    public void bill() {
      jdbc.update("UPDATE invoice SET paid = true WHERE paid = false");
    }

    // each instant once across all replicas, judged by the database clock
    @LeaseScheduled(name = "hourly-invoices", cron = "0 5 * * * *")
    public void issue(Instant instant) {
      jdbc.update("INSERT INTO invoice_run (at_ms) VALUES (?)", instant.toEpochMilli());
    }
  }
  // README-END
  // spotless:on

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Billing.class)
  static class App {}

  @Test
  @DisplayName("sqlite: the README's application runs")
  void readmeApplicationRunsOnSqlite() throws Exception {
    Properties readme = new Properties();
    try (InputStream in = getClass().getResourceAsStream("/readme-application.properties")) {
      readme.load(in);
    }
    try (Replicas replicas = new Replicas(TestDatabase.SQLITE)) {
      Map<String, Object> p = new HashMap<>();
      readme.forEach((k, v) -> p.put((String) k, v));
      p.put("spring.datasource.url", replicas.url);
      p.put("lease.table", "leases");
      ConfigurableApplicationContext ctx = replicas.builderStart(App.class, p);
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      jdbc.execute("CREATE TABLE invoice (id INT PRIMARY KEY, paid BOOLEAN NOT NULL)");
      jdbc.execute("CREATE TABLE invoice_run (at_ms BIGINT NOT NULL)");
      jdbc.update("INSERT INTO invoice (id, paid) VALUES (1, false)");

      ctx.getBean(Billing.class).bill();

      assertEquals(
          1, jdbc.queryForObject("SELECT COUNT(*) FROM invoice WHERE paid", Integer.class));
      assertEquals(
          1.0,
          Replicas.count(
              ctx, "lease.transactions", "lease", "nightly-billing", "outcome", "verified"));
      assertEquals(
          Map.of("hourly-invoices", "cron '0 5 * * * *' UTC"),
          ctx.getBean(LeasesEndpoint.class).leases().get("jobs"));
    }
  }

  @Test
  @DisplayName("the README shows exactly the example's class and properties")
  void readmeShowsExactlyTheExample() throws IOException {
    String readme = Files.readString(Path.of("../README.md"));
    String source =
        Files.readString(
            Path.of(
                "../lease-spring-boot/src/test/java/dev/lease/spring/boot/ReadmeStarterExampleTest.java"));
    int begin = source.indexOf("// README-BEGIN\n") + "// README-BEGIN\n".length();
    int end = source.indexOf("  // README-END", begin);
    String snippet =
        source
            .substring(begin, end)
            .lines()
            .map(l -> l.startsWith("  ") ? l.substring(2) : l)
            .collect(Collectors.joining("\n", "", "\n"));
    assertTrue(
        readme.contains("```java\n" + snippet + "```"),
        "README.md must show the class of ReadmeStarterExampleTest exactly:\n" + snippet);
    String properties =
        Files.readString(
            Path.of("../lease-spring-boot/src/test/resources/readme-application.properties"));
    assertTrue(
        readme.contains("```properties\n" + properties + "```"),
        "README.md must show readme-application.properties exactly:\n" + properties);
  }
}
