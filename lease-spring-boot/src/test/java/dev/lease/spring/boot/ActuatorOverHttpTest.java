package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/**
 * The README's Spring Boot configuration ({@code readme-application.properties}, verbatim: it
 * exposes {@code health,leases,metrics} over the web) starts a real web server, and the {@code
 * leases} endpoint answers over HTTP, with and without its selector, and over JMX. Its selector
 * parameter needs the parameter names in the starter's class files (the build's {@code
 * -parameters}): without them the application does not start (issue 20). The lease meters that
 * count what should not happen are listed at zero before any such event.
 */
class ActuatorOverHttpTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Billing.class)
  static class App {}

  @OnEveryDatabase
  void readmeConfigurationServesTheEndpointOverHttpAndJmx(TestDatabase db) throws Exception {
    Properties readme = new Properties();
    try (InputStream in = getClass().getResourceAsStream("/readme-application.properties")) {
      readme.load(in);
    }
    try (Replicas replicas = new Replicas(db)) {
      Map<String, Object> p = new HashMap<>();
      readme.forEach((k, v) -> p.put((String) k, v));
      // the test's own: its database, a fresh lease table, a free port, and JMX (off by default,
      // and exposing only health when on)
      p.put("spring.datasource.url", replicas.url);
      p.put("lease.table", replicas.table);
      p.put("server.port", 0);
      p.put("spring.jmx.enabled", true);
      String domain = "lease-test-" + replicas.table;
      p.put("management.endpoints.jmx.domain", domain);
      p.put("management.endpoints.jmx.exposure.include", "leases");
      ConfigurableApplicationContext ctx = replicas.webStart(App.class, p);
      String base = "http://127.0.0.1:" + ctx.getEnvironment().getProperty("local.server.port");
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

      Lease held = ctx.getBean(LeaseManager.class).tryClaim("nightly-billing").orElseThrow();
      try {
        String all = get(http, base + "/actuator/leases", 200);
        assertTrue(all.contains("\"nightly-billing\""), all);
        assertTrue(all.contains("\"hourly-invoices\""), all); // the job
        assertTrue(all.contains("\"available\":true"), all);

        String one = get(http, base + "/actuator/leases/nightly-billing", 200);
        assertTrue(one.contains("\"name\":\"nightly-billing\""), one);
        assertTrue(one.contains("\"held\":true"), one);
        assertTrue(one.contains("\"term\":" + held.term()), one);
        get(http, base + "/actuator/leases/no-such-lease", 404);

        // over JMX: the same operations, by the same parameter name
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName endpoint = new ObjectName(domain + ":type=Endpoint,name=Leases");
        Object byName =
            server.invoke(
                endpoint,
                "lease",
                new Object[] {"nightly-billing"},
                new String[] {String.class.getName()});
        Map<?, ?> info = assertInstanceOf(Map.class, byName);
        assertEquals("nightly-billing", info.get("name"), info.toString());
        assertEquals(true, info.get("held"), info.toString());
        Map<?, ?> leases =
            assertInstanceOf(
                Map.class, server.invoke(endpoint, "leases", new Object[0], new String[0]));
        assertEquals(true, leases.get("available"), leases.toString());
      } finally {
        held.release();
      }

      // the meters of what should not happen are listed before it happened, at zero
      String metrics = get(http, base + "/actuator/metrics", 200);
      for (String meter : new String[] {"lease.claims.refused", "lease.losses"}) {
        assertTrue(metrics.contains("\"" + meter + "\""), meter + " in " + metrics);
        String m = get(http, base + "/actuator/metrics/" + meter, 200);
        assertTrue(m.contains("\"value\":0.0"), m);
      }
      assertTrue(metrics.contains("\"lease.scheduler.instants\""), metrics);
      String instants =
          get(
              http,
              base + "/actuator/metrics/lease.scheduler.instants?tag=lease:hourly-invoices",
              200);
      assertTrue(instants.contains("\"value\":0.0"), instants);
      assertTrue(get(http, base + "/actuator/health", 200).contains("\"UP\""));
    }
  }

  private static String get(HttpClient http, String url, int status) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).GET().build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(status, r.statusCode(), () -> url + ": " + r.body());
    return r.body();
  }
}
