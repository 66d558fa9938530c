package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseManager;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A {@code @Leased} method called inside its caller's Spring-managed transaction: what it wrote
 * commits with that transaction, after the method returned, so the lease must outlive the method
 * until the transaction completes. Checked in STRICT mode with an attempt timeout of 10 s: the call
 * and its transaction complete within 3 s (released at the method's return, the release waited for
 * the caller's own verify lock on MySQL, MariaDB and SQLite until the attempt timeout); the lease
 * is still held when the transaction commits, so the commit is fenced; the caller's own statement
 * after the call, in the same transaction, runs under the lease; the lease is given back once the
 * transaction completed (committed or rolled back); a loss after the method returned refuses the
 * commit (<b>negative control</b>: without fencing that commit goes through). <b>Negative
 * control</b>: the interceptor that releases at the method's return (what the starter did before)
 * fails these checks, on every database (run with an attempt timeout of 5 s, still above the
 * deadline, so its stalls cost less).
 */
class LeasedInEnclosingTransactionTest {

  private static final String NAME = "in-tx";

  /** Well under the attempt timeout (10 s), well over a verified transaction on a busy machine. */
  private static final long DEADLINE_MS = 3_000;

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Beans.class)
  static class App {}

  /** The negative control's application: the interceptor releases at the method's return. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Beans.class)
  static class ReleaseAtReturnApp {
    @Bean
    LeasedMethodInterceptor leasedMethodInterceptor(
        ObjectProvider<LeaseManager> manager,
        Environment environment,
        BeanFactory beanFactory,
        LeasesInUse inUse) {
      return new LeasedMethodInterceptor(
          manager::getObject,
          new LeaseNameResolver(environment, beanFactory),
          inUse,
          List::of,
          false);
    }
  }

  /** Like {@link App}, with a lease keeping that can be paused (renewals stop). */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Beans.class)
  static class PausableApp {
    @Bean
    PausedProcess pausedProcess() {
      return new PausedProcess();
    }

    @Bean
    Poisoned poisoned() {
      return new Poisoned();
    }
  }

  /**
   * Told when the fence poisoned a transaction: lease-core calls loss listeners in no set order, so
   * the test's own one may run before the fence's.
   */
  static class Poisoned implements LeaseListener {
    final CountDownLatch latch = new CountDownLatch(1);

    @Override
    public void transactionPoisoned(Lease lease) {
      latch.countDown();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Beans {
    @Bean
    Work work(JdbcTemplate jdbc) {
      return new Work(jdbc);
    }
  }

  static class Work {
    final JdbcTemplate jdbc;

    @Value("${app.table}")
    String table;

    Work(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    /** Writes in the caller's transaction and returns the lease it ran under. */
    @Leased(NAME)
    public Lease write() {
      jdbc.update("INSERT INTO " + table + " (what) VALUES ('in the @Leased method')");
      return LeaseContext.current().orElseThrow();
    }
  }

  /** What one enclosing transaction saw. */
  static final class Observed {
    boolean withinDeadline;
    long millis;
    Lease lease;
    boolean heldAfterReturn;
    boolean heldAtCommit;
    Exception statementAfterCall;
    Exception completion;
    List<String> committed;
    boolean releasedAfter;
    boolean claimableAfter;

    @Override
    public String toString() {
      return "within "
          + DEADLINE_MS
          + " ms: "
          + withinDeadline
          + " ("
          + millis
          + " ms), held after the method returned: "
          + heldAfterReturn
          + ", held at commit: "
          + heldAtCommit
          + ", the caller's statement after the call: "
          + (statementAfterCall == null ? "ok" : statementAfterCall.toString())
          + ", completion: "
          + (completion == null ? "ok" : completion.toString())
          + ", committed: "
          + committed
          + ", released after: "
          + releasedAfter
          + ", claimable after: "
          + claimableAfter;
    }
  }

  @OnEveryDatabase
  void leaseOutlivesTheEnclosingTransactionUntilItCompletes(TestDatabase db) throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      ConfigurableApplicationContext a = start(replicas, App.class, 10);

      Observed committed = enclosingTransaction(a, false);
      assertTrue(committed.withinDeadline, committed.toString());
      assertTrue(committed.heldAfterReturn, committed.toString());
      assertTrue(committed.heldAtCommit, committed.toString());
      assertNull(committed.statementAfterCall, committed.toString());
      assertNull(committed.completion, committed.toString());
      assertEquals(
          List.of("after the call", "in the @Leased method"),
          committed.committed,
          committed.toString());
      assertTrue(committed.releasedAfter, committed.toString());
      assertTrue(committed.claimableAfter, committed.toString());
      // one transaction, verified under the lease, its commit after the method returned
      assertEquals(
          1.0, Replicas.count(a, "lease.transactions", "outcome", "verified"), Replicas.meters(a));
      assertEquals(1.0, Replicas.count(a, "lease.calls", "lease", NAME, "outcome", "ran"));
      assertEquals(List.of(), a.getBean(LeasesInUse.class).leases());

      Observed rolledBack = enclosingTransaction(a, true);
      assertTrue(rolledBack.withinDeadline, rolledBack.toString());
      assertTrue(rolledBack.heldAfterReturn, rolledBack.toString());
      assertNull(rolledBack.completion, rolledBack.toString());
      assertEquals(List.of(), rolledBack.committed, rolledBack.toString());
      assertTrue(rolledBack.releasedAfter, rolledBack.toString());
      assertTrue(rolledBack.claimableAfter, rolledBack.toString());
    }
  }

  @OnEveryDatabase
  void negativeControlReleasedAtTheMethodsReturnTheCommitIsNotUnderTheLease(TestDatabase db)
      throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      // 5 s: still above the deadline, so a stall misses it, but each stall costs less
      ConfigurableApplicationContext a = start(replicas, ReleaseAtReturnApp.class, 5);

      Observed o = enclosingTransaction(a, false);
      // the lease is gone before the commit, on every database
      assertFalse(o.heldAfterReturn, o.toString());
      assertFalse(o.heldAtCommit, o.toString());
      // the fence refuses the caller's statement after the call (no lease bound in a transaction
      // verified under one), so nothing commits
      assertTrue(o.statementAfterCall != null, o.toString());
      assertEquals(List.of(), o.committed, o.toString());
      if (db.isMySqlFamily() || db.isSqlite()) {
        // the release waited for the caller's own verify lock (PostgreSQL's FOR KEY SHARE lets
        // the release's plain UPDATE through)
        assertFalse(o.withinDeadline, o.toString());
      }
    }
  }

  @OnEveryDatabase
  void leaseLostAfterTheMethodReturnedRefusesTheEnclosingCommit(TestDatabase db) throws Exception {
    LostBeforeCommit r = lostBeforeCommit(db, true);
    assertNotNull(
        find(r.completion, LeaseLostSQLException.class),
        "the commit after the loss was refused: " + r.completion);
    assertEquals(List.of(), r.committed, "nothing of the transaction committed");
  }

  @OnEveryDatabase
  void negativeControlWithoutFencingTheCommitAfterTheLossGoesThrough(TestDatabase db)
      throws Exception {
    LostBeforeCommit r = lostBeforeCommit(db, false);
    assertNull(r.completion, () -> "committed: " + r.completion);
    assertEquals(List.of("in the @Leased method"), r.committed);
  }

  record LostBeforeCommit(Throwable completion, List<String> committed) {}

  /**
   * The {@code @Leased} method returns inside its caller's transaction; then the replica's renewals
   * stop until its local deadline passes and the lease is lost; then the caller commits.
   */
  private static LostBeforeCommit lostBeforeCommit(TestDatabase db, boolean fencing)
      throws Exception {
    try (Replicas replicas = new Replicas(db)) {
      String table = replicas.table("sb_in_tx");
      ConfigurableApplicationContext a =
          replicas.start(
              PausableApp.class,
              "A",
              Map.of(
                  "lease.fencing.enabled",
                  fencing,
                  "lease.duration",
                  "1500ms",
                  "lease.renew-interval",
                  "100ms",
                  "app.table",
                  table));
      JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
      jdbc.execute("CREATE TABLE " + table + " (what VARCHAR(64))");
      Work work = a.getBean(Work.class);
      TransactionTemplate tx = a.getBean(TransactionTemplate.class);
      PausedProcess pause = a.getBean(PausedProcess.class);
      Poisoned poisoned = a.getBean(Poisoned.class);
      Throwable completion = null;
      try {
        tx.executeWithoutResult(
            status -> {
              Lease lease = work.write();
              CountDownLatch lost = new CountDownLatch(1);
              lease.onLoss(l -> lost.countDown());
              pause.pause(false); // renewals stop, time goes on: the local deadline passes
              try {
                assertTrue(lost.await(20, TimeUnit.SECONDS), "the lease was lost");
                if (fencing) {
                  assertTrue(
                      poisoned.latch.await(20, TimeUnit.SECONDS), "the transaction was poisoned");
                }
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
            });
      } catch (RuntimeException e) {
        completion = e;
      } finally {
        pause.resume();
      }
      return new LostBeforeCommit(
          completion, jdbc.queryForList("SELECT what FROM " + table, String.class));
    }
  }

  private static <T extends Throwable> T find(Throwable t, Class<T> type) {
    for (Throwable c = t; c != null && c.getCause() != c; c = c.getCause()) {
      if (type.isInstance(c)) {
        return type.cast(c);
      }
    }
    return null;
  }

  /**
   * One replica of {@code app} in STRICT mode with an attempt timeout of {@code attemptTimeoutS}
   * seconds (the lease three times that, as by default).
   */
  private static ConfigurableApplicationContext start(
      Replicas replicas, Class<?> app, int attemptTimeoutS) {
    String table = replicas.table("sb_in_tx");
    ConfigurableApplicationContext a =
        replicas.start(
            app,
            "A",
            Map.of(
                "lease.fencing.enabled",
                true,
                "lease.fencing.mode",
                "strict",
                "lease.duration",
                (3 * attemptTimeoutS) + "s",
                "lease.attempt-timeout",
                attemptTimeoutS + "s",
                "app.table",
                table));
    a.getBean(JdbcTemplate.class).execute("CREATE TABLE " + table + " (what VARCHAR(64))");
    return a;
  }

  /**
   * Calls the {@code @Leased} method inside a transaction of the caller's, runs a statement of the
   * caller's after it, and commits (or rolls back); on a thread of its own, so that a stall shows
   * as a missed deadline rather than a slow test.
   */
  private static Observed enclosingTransaction(ConfigurableApplicationContext ctx, boolean rollback)
      throws Exception {
    Work work = ctx.getBean(Work.class); // a proxy: its fields are not the bean's
    JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
    String table = ctx.getEnvironment().getRequiredProperty("app.table");
    TransactionTemplate tx = ctx.getBean(TransactionTemplate.class);
    Observed o = new Observed();
    ExecutorService caller = Executors.newSingleThreadExecutor();
    try {
      long start = System.nanoTime();
      Future<?> call =
          caller.submit(
              () -> {
                try {
                  tx.executeWithoutResult(
                      status -> {
                        Lease lease = work.write();
                        o.lease = lease;
                        o.heldAfterReturn = lease.isHeld() && !lease.isReleased();
                        TransactionSynchronizationManager.registerSynchronization(
                            new TransactionSynchronization() {
                              @Override
                              public void beforeCommit(boolean readOnly) {
                                o.heldAtCommit = lease.isHeld() && !lease.isReleased();
                              }
                            });
                        try {
                          jdbc.update("INSERT INTO " + table + " (what) VALUES ('after the call')");
                        } catch (RuntimeException e) {
                          o.statementAfterCall = e;
                        }
                        if (rollback) {
                          status.setRollbackOnly();
                        }
                      });
                } catch (RuntimeException e) {
                  o.completion = e;
                }
              });
      try {
        call.get(DEADLINE_MS, TimeUnit.MILLISECONDS);
        o.withinDeadline = true;
      } catch (TimeoutException stalled) {
        call.get(60, TimeUnit.SECONDS); // let it end before the context closes
      }
      o.millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    } finally {
      caller.shutdownNow();
    }
    o.committed = jdbc.queryForList("SELECT what FROM " + table + " ORDER BY what", String.class);
    o.releasedAfter = o.lease != null && o.lease.isReleased();
    // the row was given back in the database, not just here: this replica claims it again at once
    Optional<Lease> again = ctx.getBean(LeaseManager.class).tryClaim(NAME);
    o.claimableAfter = again.isPresent();
    again.ifPresent(Lease::release);
    jdbc.update("DELETE FROM " + table);
    return o;
  }
}
