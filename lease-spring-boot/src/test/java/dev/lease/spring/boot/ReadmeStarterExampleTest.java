package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Keeps docs/spring-boot.md true: its properties are {@code readme-application.properties} and its
 * class is {@link Billing} (the file between its README markers, imports included), character for
 * character (checked); the application runs with them on SQLite, and a call skipped while another
 * replica holds the lease returns null.
 */
class ReadmeStarterExampleTest {

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

      Billing billing = ctx.getBean(Billing.class);
      assertEquals(1, billing.bill());
      assertEquals(
          1, jdbc.queryForObject("SELECT COUNT(*) FROM invoice WHERE paid", Integer.class));

      // another replica holds the lease: the call is skipped, the body does not run
      Lease elsewhere = ctx.getBean(LeaseManager.class).tryClaim("nightly-billing").orElseThrow();
      try {
        jdbc.update("UPDATE invoice SET paid = false");
        assertNull(billing.bill());
        assertEquals(
            0, jdbc.queryForObject("SELECT COUNT(*) FROM invoice WHERE paid", Integer.class));
      } finally {
        elsewhere.release();
      }
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
    String readme = Files.readString(Path.of("../docs/spring-boot.md"));
    String source =
        Files.readString(
            Path.of("../lease-spring-boot/src/test/java/dev/lease/spring/boot/Billing.java"));
    int begin = source.indexOf("// README-BEGIN\n") + "// README-BEGIN\n".length();
    int end = source.indexOf("// README-END", begin);
    String snippet = source.substring(begin, end);
    assertTrue(
        readme.contains("```java\n" + snippet + "```"),
        "docs/spring-boot.md must show Billing.java between its markers exactly:\n" + snippet);
    String properties =
        Files.readString(
            Path.of("../lease-spring-boot/src/test/resources/readme-application.properties"));
    assertTrue(
        readme.contains("```properties\n" + properties + "```"),
        "docs/spring-boot.md must show readme-application.properties exactly:\n" + properties);
  }
}
