package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.internal.FenceInternals;
import dev.lease.jdbc.internal.FenceRules;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.TestDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/**
 * What a {@code @Transactional} caller catches when its lease was lost while its transaction was
 * open, with the database's own idle-in-transaction kill in play: a replica is paused (its clock
 * stopped, no renewals: a frozen process) inside a verified transaction for longer than the lease
 * (2 s), so the server ends the idle session (the lease's own bound: PostgreSQL 25P03, MariaDB's
 * idle_transaction_timeout); it resumes and writes again. The caller must catch {@link
 * LeaseLostDataAccessException} (LF001/LF002), not "connection is closed", and nothing of the
 * transaction commits. Negative control: lease-jdbc weakened to report the database's error alone
 * (and fail the rollback of the dead session), and the caller gets no lease-lost error.
 */
class LeaseLostDataAccessExceptionTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    PausedProcess pausedProcess() {
      return new PausedProcess();
    }

    @Bean
    Writer writer(JdbcTemplate jdbc) {
      return new Writer(jdbc);
    }

    @Bean
    Caller caller(Writer writer) {
      return new Caller(writer);
    }

    /**
     * The negative control ({@code app.weaken-loss-reporting=true}): the fenced DataSource the
     * starter made, fenced again with lease-jdbc's rules weakened to report the database's error
     * alone ({@link LossAsDatabaseError}), through lease-jdbc's guarded entry for tests.
     */
    @Bean
    static BeanPostProcessor weakenLossReporting(
        @Value("${app.weaken-loss-reporting:false}") boolean weaken) {
      return new WeakenLossReporting(weaken);
    }
  }

  /** Runs after the starter's fencing post-processor (its order is LOWEST_PRECEDENCE - 10). */
  static final class WeakenLossReporting implements BeanPostProcessor, Ordered {
    private final boolean weaken;

    WeakenLossReporting(boolean weaken) {
      this.weaken = weaken;
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
      if (!weaken || !(bean instanceof FencedDataSource f)) {
        return bean;
      }
      return FencedDataSource.wrap(
          f.target(),
          FenceInternals.rulesForTesting(f.options().toBuilder(), new LossAsDatabaseError())
              .build());
    }

    @Override
    public int getOrder() {
      return Ordered.LOWEST_PRECEDENCE;
    }
  }

  /**
   * lease-jdbc's rules with one mechanism off: a failure of a transaction whose lease is no longer
   * held is reported as the database's error alone, and the rollback of the session the server
   * ended fails (lease-jdbc's control LOSS_AS_DATABASE_ERROR).
   */
  static final class LossAsDatabaseError implements FenceRules {
    @Override
    public boolean reportsLossAsLeaseLost() {
      return false;
    }

    @Override
    public String toString() {
      return "[LOSS_AS_DATABASE_ERROR]";
    }
  }

  /** The transactional bean. */
  static class Writer {
    final JdbcTemplate jdbc;

    @Value("${app.table}")
    String table;

    @Value("${app.session-id-sql}")
    String sessionIdSql;

    Writer(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @Transactional
    public void writeOnce() {
      jdbc.update("INSERT INTO " + table + " (who) VALUES ('stale')");
    }

    @Transactional
    public void write(AtomicLong session, CountDownLatch firstDone, CountDownLatch go) {
      jdbc.update("INSERT INTO " + table + " (who) VALUES ('first')");
      session.set(jdbc.queryForObject(sessionIdSql, Long.class));
      firstDone.countDown();
      boolean interrupted = false;
      while (true) {
        try {
          go.await();
          break;
        } catch (InterruptedException e) {
          interrupted = true; // the loss interrupts the @Leased work; this writer goes on anyway
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      Thread.interrupted();
      jdbc.update("INSERT INTO " + table + " (who) VALUES ('second')");
    }
  }

  /** The @Leased caller of the @Transactional method: what it catches is the test's result. */
  static class Caller {
    final Writer writer;

    Caller(Writer writer) {
      this.writer = writer;
    }

    @Leased("lost-while-open")
    public void callLater(
        CountDownLatch inCall, CountDownLatch proceed, AtomicReference<RuntimeException> caught) {
      inCall.countDown();
      try {
        proceed.await();
        writer.writeOnce();
      } catch (RuntimeException e) {
        caught.set(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    @Leased("lost-while-open")
    public void call(
        AtomicLong session,
        CountDownLatch firstDone,
        CountDownLatch go,
        AtomicReference<RuntimeException> caught) {
      try {
        writer.write(session, firstDone, go);
      } catch (RuntimeException e) {
        caught.set(e);
      }
    }
  }

  @OnEveryServer
  void transactionalCallerCatchesLeaseLostDataAccessException(TestDatabase db) throws Exception {
    RuntimeException caught = scenario(db, false);
    assertLeaseLost(caught);
  }

  /**
   * The other way a lease is lost to a {@code @Transactional} caller, on every database (SQLite has
   * no idle kill, and its verify's write lock keeps a successor out while a verified transaction is
   * open): the replica is frozen before its transaction, another replica claims the expired lease,
   * and the first one's transaction is refused by the verify.
   */
  @OnEveryDatabase
  void refusedTransactionIsCaughtAsLeaseLostDataAccessException(TestDatabase db) throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      String table = replicas.table("sb_lost");
      Map<String, Object> p = new HashMap<>();
      p.put("lease.fencing.enabled", true);
      p.put("lease.duration", "3s");
      p.put("app.table", table);
      p.put("app.session-id-sql", "SELECT 1");
      ConfigurableApplicationContext a = replicas.start(App.class, "A", p);
      ConfigurableApplicationContext b = replicas.start(App.class, "B", p);
      a.getBean(JdbcTemplate.class)
          .execute("CREATE TABLE " + table + " (who VARCHAR(16) NOT NULL)");
      PausedProcess pause = a.getBean(PausedProcess.class);
      CountDownLatch inCall = new CountDownLatch(1);
      CountDownLatch proceed = new CountDownLatch(1);
      AtomicReference<RuntimeException> caught = new AtomicReference<>();
      CompletableFuture<Void> call =
          CompletableFuture.runAsync(
              () -> a.getBean(Caller.class).callLater(inCall, proceed, caught), OwnThread.EXECUTOR);
      assertTrue(inCall.await(20, TimeUnit.SECONDS));
      pause.pause(true);
      dev.lease.core.LeaseManager leasesB = b.getBean(dev.lease.core.LeaseManager.class);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      java.util.Optional<dev.lease.core.Lease> took = leasesB.tryClaim("lost-while-open");
      while (took.isEmpty() && System.nanoTime() < deadline) {
        Thread.sleep(50); // poll interval of a waiting claimer
        took = leasesB.tryClaim("lost-while-open");
      }
      assertTrue(took.isPresent(), "B claimed the expired lease");
      proceed.countDown(); // A goes on, believing it holds the lease (its clock still stopped)
      try {
        call.get(30, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        // the @Leased call may end with LeaseLostException: what matters is what was caught
      }
      pause.resume();
      took.get().release();
      assertLeaseLost(caught.get());
      assertEquals(
          List.of(),
          a.getBean(JdbcTemplate.class).queryForList("SELECT who FROM " + table, String.class));
    }
  }

  private static void assertLeaseLost(RuntimeException caught) {
    assertNotNull(caught, "the stale write failed");
    LeaseLostDataAccessException lost = caught instanceof LeaseLostDataAccessException l ? l : null;
    assertNotNull(lost, () -> "caught " + chain(caught));
    assertTrue(
        List.of(LeaseLostSQLException.REFUSED, LeaseLostSQLException.POISONED)
            .contains(lost.getSqlState()),
        lost.getSqlState());
    assertTrue(lost.lease().isPresent());
    assertEquals("lost-while-open", lost.lease().get().name());
    // the reason, whatever the SQLState: a successor's claim, or the lease lost here first
    assertTrue(
        List.of(
                LeaseLostSQLException.Reason.REFUSED_BY_DATABASE,
                LeaseLostSQLException.Reason.LOST_LOCALLY)
            .contains(lost.reason()),
        String.valueOf(lost.reason()));
  }

  /**
   * Negative control: with lease-jdbc weakened to report the killed session's error alone, the
   * caller does not get the lease-lost error (on the servers: SQLite has no idle kill).
   */
  @OnEveryServer
  void negativeControlTheDatabaseErrorAloneReachesTheCaller(TestDatabase db) throws Exception {
    RuntimeException caught = scenario(db, true);
    assertNotNull(caught, "the stale write failed");
    String all = chain(caught);
    assertFalse(caught instanceof LeaseLostDataAccessException, all);
    assertFalse(all.contains("LF00"), all);
  }

  /** Runs the frozen-replica scenario on {@code db}; what the caller caught. */
  private static RuntimeException scenario(TestDatabase db, boolean weakened) throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      String table = replicas.table("sb_lost");
      Map<String, Object> p = new HashMap<>();
      p.put("lease.fencing.enabled", true);
      p.put("lease.duration", "2s");
      p.put("app.weaken-loss-reporting", weakened);
      p.put("app.table", table);
      p.put(
          "app.session-id-sql",
          switch (db) {
            case POSTGRESQL -> "SELECT pg_backend_pid()";
            case SQLITE -> "SELECT 0";
            default -> "SELECT CONNECTION_ID()";
          });
      ConfigurableApplicationContext a = replicas.start(App.class, "A", p);
      a.getBean(JdbcTemplate.class)
          .execute("CREATE TABLE " + table + " (who VARCHAR(16) NOT NULL)");
      PausedProcess pause = a.getBean(PausedProcess.class);
      Caller caller = a.getBean(Caller.class);

      AtomicLong session = new AtomicLong();
      CountDownLatch firstDone = new CountDownLatch(1);
      CountDownLatch go = new CountDownLatch(1);
      AtomicReference<RuntimeException> caught = new AtomicReference<>();
      CompletableFuture<Void> call =
          CompletableFuture.runAsync(
              () -> caller.call(session, firstDone, go, caught), OwnThread.EXECUTOR);
      assertTrue(firstDone.await(20, TimeUnit.SECONDS));
      pause.pause(true); // frozen inside its verified transaction
      if (!db.isSqlite()) {
        awaitSessionEnded(db, session.get()); // the server's idle-in-transaction kill
      } else {
        awaitRealTime(2_500);
      }
      pause.resumeClockOnly(); // the process runs again; its lease keeping not yet
      go.countDown();
      try {
        call.get(30, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        // the @Leased call itself ends with LeaseLostException: what matters is what the
        // @Transactional caller inside it caught
      }
      pause.resume();
      assertEquals(
          List.of(),
          a.getBean(JdbcTemplate.class).queryForList("SELECT who FROM " + table, String.class),
          "nothing of the stale transaction committed");
      return caught.get();
    }
  }

  /** Waits (deadline 30 s) until the server no longer has session {@code id}. */
  private static void awaitSessionEnded(TestDatabase db, long id) throws Exception {
    String sql =
        db == TestDatabase.POSTGRESQL
            ? "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = ?"
            : "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?";
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    try (Connection c = db.unpooled().getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setLong(1, id);
      while (true) {
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (rs.getLong(1) == 0) {
            return;
          }
        }
        assertTrue(System.nanoTime() < deadline, "the server did not end session " + id);
        Thread.sleep(50); // polling the server's session list
      }
    }
  }

  /** SQLite (no server kill): waits until the lease duration has passed in real time. */
  private static void awaitRealTime(long millis) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (System.nanoTime() < until) {
      Thread.sleep(50); // the frozen process's pause is the point: real time passes
    }
  }

  private static String chain(Throwable e) {
    StringWriter w = new StringWriter();
    e.printStackTrace(new PrintWriter(w));
    return w.toString();
  }
}
