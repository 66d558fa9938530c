package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.lease.core.LeaseException;
import dev.lease.core.LeaseLostException;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The replica that lost its lease cannot commit: replica A runs a {@code @Leased} method and is
 * paused (clock stopped, no renewals) before its transaction; the lease expires, replica B claims
 * it and commits; A resumes and its transaction (DataSourceTransactionManager + JdbcTemplate) is
 * refused by the database. Negative control: the same with the starter's fencing off, and both
 * commit. And a method whose lease is lost while it runs is interrupted, its transaction refused,
 * the health indicator DOWN while it keeps running.
 */
class FencedTransactionAcrossReplicasTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    Ledger ledger(JdbcTemplate jdbc, TransactionTemplate tx) {
      return new Ledger(jdbc, tx);
    }
  }

  /** Replica A's application: the same, with the pausable process. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class PausableApp extends App {
    @Bean
    PausedProcess pausedProcess() {
      return new PausedProcess();
    }
  }

  static class Ledger {
    final JdbcTemplate jdbc;
    final TransactionTemplate tx;

    @Value("${app.ledger-table}")
    String table;

    @Value("${lease.instance}")
    String instance;

    Ledger(JdbcTemplate jdbc, TransactionTemplate tx) {
      this.jdbc = jdbc;
      this.tx = tx;
    }

    /** Writes one row, after {@code before} and {@code proceed} (the test's pause points). */
    @Leased("ledger")
    public String write(CountDownLatch before, CountDownLatch proceed) throws InterruptedException {
      before.countDown();
      proceed.await();
      tx.executeWithoutResult(
          s -> jdbc.update("INSERT INTO " + table + " (who) VALUES (?)", instance));
      return "wrote";
    }

    /**
     * Waits for the loss (interrupt), then still tries its transaction, then stays on (stuck work)
     * until {@code leave}.
     */
    @Leased("ledger-2")
    public String writeAfterLoss(
        CountDownLatch started,
        AtomicReference<Throwable> txFailure,
        CountDownLatch stuck,
        CountDownLatch leave) {
      started.countDown();
      try {
        new CountDownLatch(1).await(30, TimeUnit.SECONDS);
        return "not interrupted";
      } catch (InterruptedException e) {
        // the loss interrupted the method: it must stop; a method that goes on anyway is refused
      }
      try {
        tx.executeWithoutResult(
            s -> jdbc.update("INSERT INTO " + table + " (who) VALUES (?)", "stale-" + instance));
      } catch (RuntimeException e) {
        txFailure.set(e);
      }
      stuck.countDown();
      while (true) {
        try {
          if (leave.await(30, TimeUnit.SECONDS)) {
            return "left";
          }
        } catch (InterruptedException e) {
          // stuck work ignores interrupts
        }
      }
    }

    /** Waits for the loss (interrupt), then writes its row anyway and returns. */
    @Leased("ledger-3")
    public String writeAfterLossAndReturn(CountDownLatch started) {
      started.countDown();
      try {
        new CountDownLatch(1).await(30, TimeUnit.SECONDS);
        return "not interrupted";
      } catch (InterruptedException e) {
        // the loss interrupted the method; it writes anyway
      }
      tx.executeWithoutResult(
          s -> jdbc.update("INSERT INTO " + table + " (who) VALUES (?)", "stale-" + instance));
      return "wrote";
    }
  }

  @OnEveryDatabase
  void pausedReplicasTransactionIsRefusedAfterTakeover(TestDatabase db) throws Exception {
    List<String> rows = pausedHolderScenario(db, true);
    assertEquals(List.of("B"), rows, "only the new holder's row is committed");
  }

  @OnEveryDatabase
  void negativeControlWithoutFencingBothCommit(TestDatabase db) throws Exception {
    List<String> rows = pausedHolderScenario(db, false);
    assertEquals(List.of("A", "B"), rows, "without fencing the paused replica commits too");
  }

  private List<String> pausedHolderScenario(TestDatabase db, boolean fencing) throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      String ledger = replicas.table("sb_ledger");
      Map<String, Object> p = new HashMap<>();
      p.put("lease.fencing.enabled", fencing);
      p.put("lease.duration", "1s");
      p.put("app.ledger-table", ledger);
      ConfigurableApplicationContext a = replicas.start(PausableApp.class, "A", p);
      ConfigurableApplicationContext b = replicas.start(App.class, "B", p);
      a.getBean(JdbcTemplate.class)
          .execute("CREATE TABLE " + ledger + " (who VARCHAR(16) NOT NULL)");
      Ledger ledgerA = a.getBean(Ledger.class);
      Ledger ledgerB = b.getBean(Ledger.class);
      PausedProcess pause = a.getBean(PausedProcess.class);

      CountDownLatch inMethod = new CountDownLatch(1);
      CountDownLatch resumeA = new CountDownLatch(1);
      CompletableFuture<String> callA =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return ledgerA.write(inMethod, resumeA);
                } catch (InterruptedException e) {
                  throw new IllegalStateException(e);
                }
              },
              OwnThread.EXECUTOR);
      assertTrue(inMethod.await(20, TimeUnit.SECONDS));
      pause.pause(true); // A stops, holding the lease by its own (frozen) reckoning

      // B claims once the lease expired by the database clock, and commits
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      String wroteB = null;
      while (wroteB == null && System.nanoTime() < deadline) {
        try {
          wroteB = ledgerB.write(new CountDownLatch(1), new CountDownLatch(0));
        } catch (LeaseException e) {
          // B's claim did not get its answer within the attempt timeout (a third of the 1 s
          // lease): on a loaded machine a claimer tries again, as after a refusal; B's
          // transaction's own failures are not LeaseExceptions and still fail the test
          wroteB = null;
        }
        if (wroteB == null) {
          Thread.sleep(50); // poll interval of a waiting claimer
        }
      }
      assertEquals("wrote", wroteB, "B claimed the expired lease");

      // A resumes where it stopped (its clock still stopped: it believes it holds the lease)
      resumeA.countDown();
      if (fencing) {
        ExecutionException e =
            assertThrows(ExecutionException.class, () -> callA.get(20, TimeUnit.SECONDS));
        LeaseLostSQLException refusal = find(e, LeaseLostSQLException.class);
        assertNotNull(refusal, "A's transaction was refused by the fence: " + e);
        assertEquals(
            1.0,
            Replicas.count(a, "lease.transactions", "lease", "ledger", "outcome", "refused"),
            () -> Replicas.meters(a));
      } else {
        assertEquals("wrote", callA.get(20, TimeUnit.SECONDS));
      }
      pause.resume();
      return a.getBean(JdbcTemplate.class)
          .queryForList("SELECT who FROM " + ledger + " ORDER BY who", String.class);
    }
  }

  /**
   * Replica A of {@link PausableApp} with a short lease ({@code fencing} on or off), and its empty
   * {@code ledger} table.
   */
  private static ConfigurableApplicationContext startWithLedger(
      Replicas replicas, String ledger, boolean fencing) {
    Map<String, Object> p = new HashMap<>();
    p.put("lease.fencing.enabled", fencing);
    p.put("lease.duration", "1500ms");
    p.put("lease.renew-interval", "100ms");
    p.put("app.ledger-table", ledger);
    ConfigurableApplicationContext a = replicas.start(PausableApp.class, "A", p);
    a.getBean(JdbcTemplate.class).execute("CREATE TABLE " + ledger + " (who VARCHAR(16) NOT NULL)");
    return a;
  }

  @OnEveryDatabase
  void methodWhoseLeaseIsLostIsInterruptedAndRefused(TestDatabase db) throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      String ledger = replicas.table("sb_ledger");
      ConfigurableApplicationContext a = startWithLedger(replicas, ledger, true);
      Ledger ledgerA = a.getBean(Ledger.class);
      PausedProcess pause = a.getBean(PausedProcess.class);

      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch stuck = new CountDownLatch(1);
      CountDownLatch leave = new CountDownLatch(1);
      AtomicReference<Throwable> txFailure = new AtomicReference<>();
      CompletableFuture<String> call =
          CompletableFuture.supplyAsync(
              () -> ledgerA.writeAfterLoss(started, txFailure, stuck, leave), OwnThread.EXECUTOR);
      assertTrue(started.await(20, TimeUnit.SECONDS));

      // while it runs, its lease is renewed; lease.renewal.latency records each renewal: with every
      // lease statement made 150 ms late (a slow network or pool), each takes at least that and
      // less than the attempt timeout (500 ms: a slower attempt fails)
      pause.slowAttempts(Duration.ofMillis(150));
      MeterRegistry registry = a.getBean(MeterRegistry.class);
      awaitRenewals(registry, renewals(registry) + 1); // one may have been under way, not slowed
      Timer latency = registry.get("lease.renewal.latency").tag("lease", "ledger-2").timer();
      long count0 = latency.count();
      double total0 = latency.totalTime(TimeUnit.MILLISECONDS);
      awaitRenewals(registry, renewals(registry) + 3);
      pause.pause(false); // renewals stop, time goes on: the local deadline passes, A gives up
      assertEquals((long) renewals(registry), latency.count(), () -> Replicas.meters(registry));
      double slowMeanMs =
          (latency.totalTime(TimeUnit.MILLISECONDS) - total0) / (latency.count() - count0);
      double maxMs = latency.max(TimeUnit.MILLISECONDS);
      assertTrue(slowMeanMs >= 150, () -> "mean of the slowed renewals " + slowMeanMs + " ms");
      assertTrue(maxMs < 500, () -> "max " + maxMs + " ms");
      // the batched renewal's passes are timed too (every renewal above was one pass's)
      Timer passes = registry.get("lease.renewal.pass").timer();
      assertTrue(passes.count() >= 3, () -> Replicas.meters(registry));

      assertTrue(stuck.await(20, TimeUnit.SECONDS), "the loss interrupted the method");
      assertNotNull(
          find(txFailure.get(), LeaseLostSQLException.class),
          "its transaction after the loss was refused: " + txFailure.get());
      // the lease the running method is supposed to hold is no longer held: DOWN, and named
      Map<String, Object> health = Replicas.health(a);
      assertEquals("DOWN", health.get("status"), health.toString());
      @SuppressWarnings("unchecked")
      List<Map<String, Object>> notHeld = (List<Map<String, Object>>) health.get("notHeld");
      assertEquals(1, notHeld.size(), health.toString());
      assertEquals("ledger-2", notHeld.get(0).get("name"));
      assertEquals("lost: local_deadline", notHeld.get(0).get("state"));

      leave.countDown();
      ExecutionException e =
          assertThrows(ExecutionException.class, () -> call.get(20, TimeUnit.SECONDS));
      assertInstanceOf(LeaseLostException.class, e.getCause());
      assertTrue(
          e.getCause().getMessage().endsWith("its fenced transactions from then on were refused"),
          e.getCause().getMessage());
      pause.resume(); // the lease database answers again
      Map<String, Object> after = Replicas.health(a);
      assertEquals("UP", after.get("status"), after.toString());
      // lease-core tells the listeners of the loss on its loss-handling threads
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (Replicas.count(a, "lease.losses", "lease", "ledger-2", "reason", "local_deadline") < 1
          && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(
          1.0,
          Replicas.count(a, "lease.losses", "lease", "ledger-2", "reason", "local_deadline"),
          () -> Replicas.meters(a));
      assertEquals(0.0, Replicas.gauge(a, "lease.held", "lease", "ledger-2"));
      assertEquals(1.0, Replicas.count(a, "lease.calls", "lease", "ledger-2", "outcome", "lost"));
      assertEquals(
          List.of(),
          a.getBean(JdbcTemplate.class).queryForList("SELECT who FROM " + ledger, String.class));
    }
  }

  /**
   * Without fencing, a method whose lease was lost while it ran is still interrupted, but its
   * transaction after the loss commits: the exception says so rather than claiming a refusal.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("sqlite")
  void lostMethodWithoutFencingSaysItsTransactionsWereNotRefused(TestDatabase db) throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      String ledger = replicas.table("sb_ledger");
      ConfigurableApplicationContext a = startWithLedger(replicas, ledger, false);
      CountDownLatch started = new CountDownLatch(1);
      Ledger ledgerA = a.getBean(Ledger.class);
      CompletableFuture<String> call =
          CompletableFuture.supplyAsync(
              () -> ledgerA.writeAfterLossAndReturn(started), OwnThread.EXECUTOR);
      assertTrue(started.await(20, TimeUnit.SECONDS));
      PausedProcess pause = a.getBean(PausedProcess.class);
      pause.pause(false); // renewals stop: the local deadline passes, A gives up
      ExecutionException e =
          assertThrows(ExecutionException.class, () -> call.get(20, TimeUnit.SECONDS));
      pause.resume();
      LeaseLostException lost = assertInstanceOf(LeaseLostException.class, e.getCause());
      assertTrue(lost.getMessage().endsWith(LeasedMethodInterceptor.NOT_FENCED), lost.getMessage());
      assertFalse(lost.getMessage().contains("were refused"), lost.getMessage());
      assertEquals(
          List.of("stale-A"),
          a.getBean(JdbcTemplate.class).queryForList("SELECT who FROM " + ledger, String.class),
          "what the message says: the stale write committed");
    }
  }

  static java.util.stream.Stream<TestDatabase> sqlite() {
    return java.util.stream.Stream.of(TestDatabase.SQLITE);
  }

  private static void awaitRenewals(MeterRegistry registry, double n) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (renewals(registry) < n && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertTrue(renewals(registry) >= n, () -> Replicas.meters(registry));
  }

  private static double renewals(MeterRegistry registry) {
    return Replicas.count(registry, "lease.renewals", "lease", "ledger-2", "outcome", "renewed");
  }

  private static <T extends Throwable> T find(Throwable t, Class<T> type) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return type.cast(c);
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return null;
  }

  @SuppressWarnings("unused")
  private static void unreachable() {
    fail();
  }
}
