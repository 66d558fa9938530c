package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseReleasedException;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Two replicas (application contexts) on one database call the same {@code @Leased} method: it runs
 * on one, the other call is skipped; the method's JdbcTemplate transactions are fenced (verified);
 * the endpoint, the health indicator and the meters show it; on context close the running call is
 * interrupted before its lease is released, so the other replica claims at once.
 */
class LeasedAcrossReplicasTest {

  /** The application of both replicas. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    Billing billing(JdbcTemplate jdbc, TransactionTemplate tx) {
      return new Billing(jdbc, tx);
    }

    @Bean
    Events events() {
      return new Events();
    }
  }

  /**
   * What happened, in order, on one replica (a LeaseListener bean: the starter adds it to the
   * LeaseManager; a LeasedCallListener bean: the interceptor tells it how calls ended).
   */
  static class Events implements LeaseListener, LeasedCallListener {
    final List<String> list = new CopyOnWriteArrayList<>();
    final List<String> calls = new CopyOnWriteArrayList<>();

    @Override
    public void released(Lease lease) {
      list.add("released " + lease.name());
    }

    @Override
    public void called(String lease, Outcome outcome) {
      calls.add(outcome + " " + lease);
    }
  }

  static class Billing {
    final JdbcTemplate jdbc;
    final TransactionTemplate tx;
    final AtomicInteger runs = new AtomicInteger();

    @Value("${app.events-table}")
    String table;

    @Value("${lease.instance}")
    String instance;

    Events events;

    Billing(JdbcTemplate jdbc, TransactionTemplate tx) {
      this.jdbc = jdbc;
      this.tx = tx;
    }

    @org.springframework.beans.factory.annotation.Autowired
    void setEvents(Events events) {
      this.events = events;
    }

    @Leased("billing-${app.region}")
    public String run(CountDownLatch started, CountDownLatch proceed) throws InterruptedException {
      runs.incrementAndGet();
      started.countDown();
      try {
        proceed.await();
      } catch (InterruptedException e) {
        events.list.add("interrupted");
        throw e;
      }
      tx.executeWithoutResult(
          s -> jdbc.update("INSERT INTO " + table + " (who) VALUES (?)", instance));
      return "ran";
    }

    public int runs() {
      return runs.get();
    }

    @Leased("invoice-#{#id}")
    public boolean pay(long id) {
      return true;
    }
  }

  @OnEveryDatabase
  void leasedMethodRunsOnceAcrossTwoReplicas(TestDatabase db) throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      String events = replicas.table("sb_events");
      Map<String, Object> p =
          Map.of(
              "lease.fencing.enabled",
              true,
              "lease.duration",
              "3s",
              "app.region",
              "eu",
              "app.events-table",
              events);
      ConfigurableApplicationContext a = replicas.start(App.class, "A", p);
      ConfigurableApplicationContext b = replicas.start(App.class, "B", p);
      JdbcTemplate jdbcA = a.getBean(JdbcTemplate.class);
      jdbcA.execute("CREATE TABLE " + events + " (who VARCHAR(16) NOT NULL)");

      // the DataSource bean is fenced; JdbcTemplate and the transaction manager use it unchanged
      assertInstanceOf(FencedDataSource.class, a.getBean(DataSource.class));

      Billing billingA = a.getBean(Billing.class);
      Billing billingB = b.getBean(Billing.class);
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch proceed = new CountDownLatch(1);
      CompletableFuture<String> callA =
          CompletableFuture.supplyAsync(() -> call(billingA, started, proceed), OwnThread.EXECUTOR);
      assertTrue(started.await(20, TimeUnit.SECONDS), "A's call started");

      // B's call while A holds the lease: skipped, returns null, the body never ran
      assertNull(billingB.run(new CountDownLatch(1), new CountDownLatch(0)));
      assertEquals(0, billingB.runs());

      // A's endpoint lists the lease (term, expiry by the database clock); B's lists none
      Map<String, Object> listed = a.getBean(LeasesEndpoint.class).leases();
      @SuppressWarnings("unchecked")
      List<Map<String, Object>> leasesA = (List<Map<String, Object>>) listed.get("leases");
      assertEquals(1, leasesA.size(), listed.toString());
      assertEquals("billing-eu", leasesA.get(0).get("name"));
      assertEquals("A", leasesA.get(0).get("instance"));
      assertEquals(true, leasesA.get(0).get("heldInDatabase"), listed.toString());
      assertTrue(leasesA.get(0).containsKey("expiresAt"), listed.toString());
      assertEquals(
          List.of(), b.getBean(LeasesEndpoint.class).leases().get("leases"), "B holds nothing");
      // B's endpoint tells who holds a lease by name: what the database says
      Map<String, Object> described = b.getBean(LeasesEndpoint.class).lease("billing-eu");
      assertEquals("A", described.get("instance"), described.toString());
      assertEquals(true, described.get("held"), described.toString());
      assertEquals(leasesA.get(0).get("term"), described.get("term"));
      Map<String, Object> healthA = Replicas.health(a);
      assertEquals("UP", healthA.get("status"), healthA.toString());
      assertEquals(List.of("billing-eu"), healthA.get("held"));
      assertEquals(1.0, Replicas.gauge(a, "lease.held", "lease", "billing-eu"));

      proceed.countDown();
      assertEquals("ran", callA.get(20, TimeUnit.SECONDS));
      assertEquals(1, billingA.runs());
      assertEquals(List.of("A"), jdbcA.queryForList("SELECT who FROM " + events, String.class));

      // a SpEL name
      assertTrue(billingA.pay(7));

      // the meters: what this test did, and nothing else
      assertEquals(1.0, Replicas.count(a, "lease.calls", "lease", "billing-eu", "outcome", "ran"));
      assertEquals(
          1.0, Replicas.count(b, "lease.calls", "lease", "billing-eu", "outcome", "skipped"));
      assertEquals(0.0, Replicas.count(b, "lease.calls", "lease", "billing-eu", "outcome", "ran"));
      assertEquals(1.0, Replicas.count(a, "lease.claims", "lease", "billing-eu"));
      assertEquals(0.0, Replicas.count(b, "lease.claims", "lease", "billing-eu"));
      assertEquals(1.0, Replicas.count(b, "lease.claims.refused", "lease", "billing-eu"));
      assertEquals(0.0, Replicas.count(a, "lease.claims.refused", "lease", "billing-eu"));
      assertEquals(1.0, Replicas.count(a, "lease.releases", "lease", "billing-eu"));
      assertEquals(
          1.0,
          Replicas.count(a, "lease.transactions", "lease", "billing-eu", "outcome", "verified"));
      assertEquals(
          1.0,
          Replicas.count(a, "lease.calls", "lease", "invoice-7", "outcome", "ran"),
          () -> Replicas.meters(a));
      assertEquals(0.0, Replicas.gauge(a, "lease.held", "lease", "billing-eu"));

      // hand-overs: A's first claim counts (the name had no term before);
      // A again right after itself does not; B after A does; A after B does
      assertEquals(1.0, Replicas.count(a, "lease.handovers", "lease", "billing-eu"));
      assertEquals("ran", billingA.run(new CountDownLatch(1), new CountDownLatch(0)));
      assertEquals(1.0, Replicas.count(a, "lease.handovers", "lease", "billing-eu"));
      assertEquals("ran", billingB.run(new CountDownLatch(1), new CountDownLatch(0)));
      assertEquals(1.0, Replicas.count(b, "lease.handovers", "lease", "billing-eu"));

      // graceful shutdown: A runs again and is blocked; closing A interrupts the call, then
      // releases its lease (not left to expire), so B claims at once
      CountDownLatch started2 = new CountDownLatch(1);
      CompletableFuture<String> callA2 =
          CompletableFuture.supplyAsync(
              () -> call(billingA, started2, new CountDownLatch(1)), OwnThread.EXECUTOR);
      assertTrue(started2.await(20, TimeUnit.SECONDS));
      assertEquals(2.0, Replicas.count(a, "lease.handovers", "lease", "billing-eu"));
      Events eventsA = a.getBean(Events.class);
      eventsA.list.clear();
      eventsA.calls.clear();
      a.close();
      assertEquals(List.of("interrupted", "released billing-eu"), eventsA.list);
      ExecutionException stopped =
          assertThrows(ExecutionException.class, () -> callA2.get(20, TimeUnit.SECONDS));
      LeaseReleasedException released =
          assertInstanceOf(LeaseReleasedException.class, stopped.getCause());
      assertTrue(released.workStopped(), "the call ended before its lease was released");
      assertInstanceOf(InterruptedException.class, released.getCause());
      // the meter registry closed with the context; a LeasedCallListener of its own still hears it
      assertEquals(List.of("STOPPED billing-eu"), eventsA.calls);
      assertEquals("ran", billingB.run(new CountDownLatch(1), new CountDownLatch(0)));
      assertEquals(
          List.of("B", "B"),
          b.getBean(JdbcTemplate.class)
              .queryForList("SELECT who FROM " + events + " WHERE who = 'B'", String.class));
      assertFalse(a.isActive());
    }
  }

  private static String call(Billing billing, CountDownLatch started, CountDownLatch proceed) {
    try {
      return billing.run(started, proceed);
    } catch (InterruptedException e) {
      throw new IllegalStateException("the interceptor let an InterruptedException through", e);
    }
  }
}
