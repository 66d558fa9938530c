package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.LeaseManager;
import dev.lease.testing.TestDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A {@code jdbc:fenced:} URL given to the starter (issue 40 item 3): the lease manager would run
 * its SQL through the fence, and the starter's own fencing would wrap a pool that is fenced
 * already. Start-up fails saying to give the plain URL and {@code lease.fencing.enabled=true}; the
 * plain URL beside it (the control) starts.
 */
class WrongWiringStarterTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {}

  private static Map<String, Object> properties(Replicas r, String url, boolean fencing) {
    Map<String, Object> p = new HashMap<>();
    p.put("spring.datasource.url", url);
    if (url.startsWith("jdbc:fenced:")) { // Boot knows no driver for the prefix: name it
      p.put("spring.datasource.driver-class-name", "dev.lease.jdbc.FencedDriver");
    }
    p.put("lease.table", r.table);
    p.put("lease.create-table", true);
    p.put("lease.fencing.enabled", fencing);
    p.put("spring.jmx.enabled", false);
    return p;
  }

  @Test
  @DisplayName("postgresql: a jdbc:fenced: URL fails start-up, with and without lease.fencing")
  void aJdbcFencedUrlFailsStartUp() {
    try (Replicas r = new Replicas(TestDatabase.POSTGRESQL)) {
      String fencedUrl = "jdbc:fenced:" + r.url.substring("jdbc:".length());
      String withFencing =
          chain(
              assertThrows(
                  RuntimeException.class,
                  () -> r.builderStart(App.class, properties(r, fencedUrl, true))));
      assertTrue(withFencing.contains("fence once"), withFencing);
      String withoutFencing =
          chain(
              assertThrows(
                  RuntimeException.class,
                  () -> r.builderStart(App.class, properties(r, fencedUrl, false))));
      assertTrue(
          withoutFencing.contains("give spring.datasource.url the plain jdbc: URL"),
          withoutFencing);

      // the control: the plain URL with the starter's fencing starts, its manager claims
      ConfigurableApplicationContext ok = r.builderStart(App.class, properties(r, r.url, true));
      assertTrue(ok.getBean(LeaseManager.class).tryClaim("wiring").isPresent());
    }
  }

  private static String chain(Throwable e) {
    StringWriter w = new StringWriter();
    e.printStackTrace(new PrintWriter(w));
    return w.toString();
  }
}
