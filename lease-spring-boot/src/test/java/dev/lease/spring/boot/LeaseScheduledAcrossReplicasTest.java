package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * Two replicas run the same {@code @LeaseScheduled} job: every instant runs once across both (each
 * round records its instant in a fenced transaction). Negative control: the same job on Spring's
 * own {@code @Scheduled} (what the replicas do without the starter) runs instants twice, and the
 * same check reports it.
 */
class LeaseScheduledAcrossReplicasTest {

  static final long RATE_MS = 300;
  static final int ROUNDS = 6;

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    Ticks ticks(JdbcTemplate jdbc) {
      return new Ticks(jdbc);
    }
  }

  static class Ticks {
    final JdbcTemplate jdbc;

    @Value("${app.rounds-table}")
    String table;

    @Value("${lease.instance}")
    String instance;

    Ticks(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @LeaseScheduled(name = "tick-${app.rounds-table}", fixedRate = "${app.rate}")
    public void tick(Instant instant) {
      jdbc.update(
          "INSERT INTO " + table + " (instant_ms, who) VALUES (?, ?)",
          instant.toEpochMilli(),
          instance);
    }
  }

  /**
   * Without the starter: Spring's scheduler on each replica, the instant by the replica's clock.
   */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  @EnableScheduling
  static class WithoutStarter {
    @Bean
    PlainTicks plainTicks(JdbcTemplate jdbc) {
      return new PlainTicks(jdbc);
    }
  }

  static class PlainTicks {
    final JdbcTemplate jdbc;

    @Value("${app.rounds-table}")
    String table;

    @Value("${lease.instance}")
    String instance;

    PlainTicks(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @Scheduled(fixedRateString = "${app.rate}")
    public void tick() {
      long now = System.currentTimeMillis();
      jdbc.update(
          "INSERT INTO " + table + " (instant_ms, who) VALUES (?, ?)",
          now - now % RATE_MS,
          instance);
    }
  }

  @OnEveryDatabase
  void eachInstantRunsOnceAcrossTwoReplicas(TestDatabase db) throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      String rounds = replicas.table("sb_rounds");
      ConfigurableApplicationContext[] ab = twoReplicas(replicas, App.class, rounds, true);
      ConfigurableApplicationContext a = ab[0];
      ConfigurableApplicationContext b = ab[1];
      JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
      awaitRounds(jdbc, rounds, ROUNDS);
      MeterRegistry ma = a.getBean(MeterRegistry.class);
      MeterRegistry mb = b.getBean(MeterRegistry.class);
      a.close();
      b.close();

      Map<Long, List<String>> byInstant = byInstant(jdbc(replicas, db), rounds);
      assertTrue(byInstant.size() >= ROUNDS, byInstant.toString());
      assertEquals(List.of(), duplicates(byInstant), "instants run more than once: " + byInstant);
      for (long instant : byInstant.keySet()) {
        assertEquals(0, instant % RATE_MS, "instants are anchor + k x rate: " + byInstant);
      }
      // each round was claimed and ran one fenced (verified) transaction, on A or on B
      String job = "tick-" + rounds;
      double claims =
          Replicas.count(ma, "lease.claims", "lease", job)
              + Replicas.count(mb, "lease.claims", "lease", job);
      double verified =
          Replicas.count(ma, "lease.transactions", "lease", job, "outcome", "verified")
              + Replicas.count(mb, "lease.transactions", "lease", job, "outcome", "verified");
      // every recorded round verified its transaction; a round cut short by the close (at most one
      // per replica) may have verified one that was then rolled back
      assertTrue(
          verified >= byInstant.size() && verified <= byInstant.size() + 2,
          () -> byInstant.size() + " rounds\n" + Replicas.meters(ma) + Replicas.meters(mb));
      assertTrue(claims >= byInstant.size(), () -> Replicas.meters(ma) + Replicas.meters(mb));
    }
  }

  @OnEveryDatabase
  void negativeControlSpringSchedulingOnBothReplicasRunsInstantsTwice(TestDatabase db)
      throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      String rounds = replicas.table("sb_rounds");
      ConfigurableApplicationContext[] ab =
          twoReplicas(replicas, WithoutStarter.class, rounds, false);
      ConfigurableApplicationContext a = ab[0];
      ConfigurableApplicationContext b = ab[1];
      JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
      // both replicas tick every RATE_MS: enough instants that most are run by both; counted from
      // B's first tick (A alone may have ticked ROUNDS times while B's context started)
      awaitTicksOf(jdbc, rounds, "B", ROUNDS);
      a.close();
      b.close();
      Map<Long, List<String>> byInstant = byInstant(jdbc(replicas, db), rounds);
      assertFalse(duplicates(byInstant).isEmpty(), "the check reports instants run twice");
    }
  }

  /**
   * Replicas A and B of {@code app} (with the starter's scheduling or Spring's own), whose rounds
   * go to the new table {@code rounds}.
   */
  private static ConfigurableApplicationContext[] twoReplicas(
      Replicas replicas, Class<?> app, String rounds, boolean starter) {
    Map<String, Object> p = properties(rounds, starter);
    ConfigurableApplicationContext a = replicas.start(app, "A", p);
    createRoundsTable(a, rounds);
    return new ConfigurableApplicationContext[] {a, replicas.start(app, "B", p)};
  }

  private static Map<String, Object> properties(String rounds, boolean starter) {
    Map<String, Object> p = new HashMap<>();
    p.put("lease.enabled", starter);
    p.put("lease.fencing.enabled", true);
    p.put("lease.duration", "3s");
    p.put("lease.scheduler.poll-interval", "100ms");
    p.put("app.rounds-table", rounds);
    p.put("app.rate", RATE_MS + "ms");
    return p;
  }

  private static void createRoundsTable(ConfigurableApplicationContext ctx, String rounds) {
    ctx.getBean(JdbcTemplate.class)
        .execute(
            "CREATE TABLE IF NOT EXISTS "
                + rounds
                + " (instant_ms BIGINT NOT NULL, who VARCHAR(16) NOT NULL)");
  }

  private static void awaitRounds(JdbcTemplate jdbc, String rounds, int n) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      Integer distinct =
          jdbc.queryForObject("SELECT COUNT(DISTINCT instant_ms) FROM " + rounds, Integer.class);
      if (distinct != null && distinct >= n) {
        return;
      }
      Thread.sleep(50);
    }
  }

  /** Waits (deadline 30 s) until replica {@code who} recorded {@code n} rounds. */
  private static void awaitTicksOf(JdbcTemplate jdbc, String rounds, String who, int n)
      throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      Integer ticks =
          jdbc.queryForObject(
              "SELECT COUNT(*) FROM " + rounds + " WHERE who = ?", Integer.class, who);
      if (ticks != null && ticks >= n) {
        return;
      }
      Thread.sleep(50);
    }
  }

  /** The rounds table read after both replicas closed. */
  private static JdbcTemplate jdbc(Replicas replicas, TestDatabase db) {
    return new JdbcTemplate(
        new org.springframework.jdbc.datasource.DriverManagerDataSource(replicas.url));
  }

  private static Map<Long, List<String>> byInstant(JdbcTemplate jdbc, String rounds) {
    Map<Long, List<String>> out = new TreeMap<>();
    jdbc.query(
        "SELECT instant_ms, who FROM " + rounds,
        rs -> {
          out.computeIfAbsent(rs.getLong(1), k -> new java.util.ArrayList<>()).add(rs.getString(2));
        });
    return out;
  }

  private static List<Long> duplicates(Map<Long, List<String>> byInstant) {
    return byInstant.entrySet().stream()
        .filter(e -> e.getValue().size() > 1)
        .map(Map.Entry::getKey)
        .toList();
  }
}
