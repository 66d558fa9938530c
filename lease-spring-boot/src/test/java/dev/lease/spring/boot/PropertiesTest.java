package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.AutoCommitPolicy;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.ReadOnlyPolicy;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@code lease.*} binds into the LeaseManager and the fenced DataSource, on every database; a bad
 * value stops the context with a message naming the property (on SQLite: binding does not depend on
 * the database).
 */
class PropertiesTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {}

  /** lease.duration alone derives the other timings as LeaseTimings.of and the agent do. */
  @Test
  void leaseDurationDerivesAsLeaseCoreDoes() {
    for (Duration d :
        new Duration[] {
          Duration.ofSeconds(1),
          Duration.ofSeconds(2),
          Duration.ofSeconds(7),
          Duration.ofSeconds(15),
          Duration.ofSeconds(45),
          Duration.ofMinutes(10)
        }) {
      LeaseProperties p = new LeaseProperties();
      p.setDuration(d);
      assertEquals(LeaseTimings.of(d).toString(), p.toTimings().toString(), d.toString());
    }
  }

  @OnEveryDatabase
  void propertiesBind(TestDatabase db) {
    try (Replicas replicas = new Replicas(db)) {
      Map<String, Object> p = new HashMap<>();
      p.put("lease.duration", "3s");
      p.put("lease.renew-interval", "250ms");
      p.put("lease.fencing.enabled", "true");
      p.put("lease.fencing.mode", "verify");
      p.put("lease.fencing.auto-commit", "refuse");
      p.put("lease.fencing.read-only", "skip");
      p.put("lease.fencing.idle-in-transaction-timeout", "2s");
      ConfigurableApplicationContext ctx = replicas.start(App.class, "replica-7", p);
      LeaseManager leases = ctx.getBean(LeaseManager.class);
      assertEquals(replicas.table, leases.table());
      assertEquals("replica-7", leases.instance());
      LeaseTimings t = leases.timings();
      assertEquals(Duration.ofSeconds(3), t.leaseDuration());
      assertEquals(Duration.ofMillis(250), t.renewInterval());
      // the timings not given derive from lease.duration
      assertEquals(Duration.ofSeconds(1), t.attemptTimeout());
      assertEquals(Duration.ofSeconds(2), t.localDeadline());
      assertEquals(Duration.ofSeconds(1), t.gracePeriod());
      FencedDataSource fenced =
          assertInstanceOf(FencedDataSource.class, ctx.getBean(DataSource.class));
      FencingOptions o = fenced.options();
      assertEquals(FencingMode.VERIFY, o.mode());
      assertEquals(AutoCommitPolicy.REFUSE, o.autoCommit());
      assertEquals(ReadOnlyPolicy.SKIP, o.readOnly());
      assertEquals(Duration.ofSeconds(2), o.idleInTransactionTimeout());
    }
  }

  static Stream<Arguments> badProperties() {
    return Stream.of(
        Arguments.of("lease.renew-interval", "20s"),
        Arguments.of("lease.local-deadline", "15s"),
        Arguments.of("lease.duration", "soon"),
        Arguments.of("lease.max-clock-rate-error", "0.7"),
        Arguments.of("lease.fencing.mode", "paranoid"),
        Arguments.of("lease.fencing.idle-in-transaction-timeout", "0s"),
        Arguments.of("lease.scheduler.poll-interval", "0ms"),
        Arguments.of("lease.connect-timeout", "0s"),
        Arguments.of("lease.tabel", "typo"),
        Arguments.of("lease.fencing.enabeld", "true"),
        Arguments.of("lease.table", "bad;name"),
        Arguments.of("lease.instance", "x".repeat(200)));
  }

  @ParameterizedTest(name = "sqlite: {0}={1}")
  @MethodSource("badProperties")
  void badPropertyStopsTheContextNamingIt(String property, String value) {
    try (Replicas replicas = new Replicas(TestDatabase.SQLITE)) {
      Map<String, Object> p = new HashMap<>();
      p.put(property, value);
      RuntimeException e =
          assertThrows(RuntimeException.class, () -> replicas.start(App.class, "A", p));
      String all = chain(e);
      assertTrue(all.contains(property), "the failure names " + property + ":\n" + all);
    }
  }

  @OnEveryDatabase
  void missingLeaseTableStopsTheContextSayingWhatToDo(TestDatabase db) {
    try (Replicas replicas = new Replicas(db)) {
      RuntimeException e =
          assertThrows(
              RuntimeException.class,
              () -> replicas.start(App.class, "A", Map.of("lease.create-table", false)));
      String all = chain(e);
      // a Spring user is told the property or the DDL, not the builder's createTableIfMissing()
      assertTrue(all.contains("set lease.create-table=true to create it at start"), all);
      assertTrue(all.contains("does not exist"), all);
      assertTrue(all.contains("CREATE TABLE"), all);
      assertFalse(all.contains("createTableIfMissing"), all);
    }
  }

  private static String chain(Throwable e) {
    StringWriter w = new StringWriter();
    e.printStackTrace(new PrintWriter(w));
    return w.toString();
  }
}
