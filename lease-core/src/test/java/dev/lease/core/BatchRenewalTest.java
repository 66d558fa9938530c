package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.CountingDataSource;
import dev.lease.testing.FailingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A manager renews every lease it keeps with one statement per renew interval (per 1,000 leases),
 * and learns from the answer which ones it lost: loss stays per lease, and a lease a pass failed to
 * renew is renewed by the next. Counted through {@link CountingDataSource}: the statements between
 * two passes are the statements of one pass. Negative control: a manager that renews each lease
 * with its own statement (RENEW_ONE_BY_ONE) is caught by the same count.
 */
class BatchRenewalTest {

  /** Renew every 150 ms; room for a slow, shared machine before the 4 s local deadline. */
  private static final LeaseTimings TIMINGS = Fixture.timings(8_000, 150, 4_000, 2_000, 500);

  /** What the listener saw: each pass, with the statements counted up to its end. */
  record PassSeen(int leases, int renewed, int lost, int failed, long statementsSoFar) {}

  static final class Witness implements LeaseListener {
    final CountingDataSource counting;
    final BlockingQueue<PassSeen> passes = new LinkedBlockingQueue<>();
    final Map<RenewalOutcome, AtomicInteger> outcomes = new ConcurrentHashMap<>();

    Witness(CountingDataSource counting) {
      this.counting = counting;
    }

    @Override
    public void renewalPass(int leases, int renewed, int lost, int failed, Duration elapsed) {
      passes.add(
          new PassSeen(
              leases, renewed, lost, failed, counting == null ? 0 : counting.statements()));
    }

    @Override
    public void renewalCompleted(Lease lease, RenewalOutcome outcome) {
      outcomes.computeIfAbsent(outcome, o -> new AtomicInteger()).incrementAndGet();
    }

    PassSeen next(java.util.function.Predicate<PassSeen> wanted) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (true) {
        PassSeen p = passes.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (p == null) {
          throw new AssertionError("no such renewal pass within 20 s");
        }
        if (wanted.test(p)) {
          return p;
        }
      }
    }
  }

  @OnEveryDatabase
  void oneStatementPerPassRenewsEveryLease(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertEquals(
          1, statementsPerPass(f, 20, null, TIMINGS), db + ": statements of a pass of 20 leases");
    }
  }

  /** Negative control: a statement per lease is caught by the same count. */
  @OnEveryDatabase
  void aStatementPerLeaseIsCaughtByTheSameCount(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertEquals(
          20, statementsPerPass(f, 20, WeakenedLifecycle.renewOneByOne(), TIMINGS), db.toString());
    }
  }

  /** 1,001 leases: two statements, the batch is cut at 1,000 names. */
  @OnEveryDatabase
  void aPassIsCutIntoStatementsOfAThousandLeases(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      // passes every second, so that one pass of 1,001 leases ends before the next begins
      LeaseTimings slower = Fixture.timings(60_000, 1_000, 30_000, 10_000, 1_000);
      assertEquals(
          2, statementsPerPass(f, 1_001, null, slower), db + ": statements of 1,001 leases");
    }
  }

  /** Holds {@code n} leases; the statements of one complete pass that renewed all of them. */
  private static long statementsPerPass(
      Fixture f, int n, WeakenedLifecycle fault, LeaseTimings timings) throws Exception {
    CountingDataSource counting = new CountingDataSource(f.pool(4));
    Witness witness = new Witness(counting);
    LeaseManager.Builder b = f.builder(counting, "batch").timings(timings).listener(witness);
    LeaseManager m = f.build(b, fault);
    List<Lease> leases = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      leases.add(m.tryClaim("batch-" + i).orElseThrow().hold());
    }
    // two passes in a row that each renewed all n: the statements between their ends are the
    // later one's (a pass that found some renewals still in flight leaves them out, on a slow
    // machine, and is skipped here)
    PassSeen previous = witness.next(p -> true);
    while (true) {
      PassSeen current = witness.next(p -> true);
      if (previous.leases() == n
          && previous.renewed() == n
          && current.leases() == n
          && current.renewed() == n) {
        for (Lease l : leases) {
          assertTrue(l.isHeld(), l + " is held");
        }
        return current.statementsSoFar() - previous.statementsSoFar();
      }
      previous = current;
    }
  }

  @OnEveryDatabase
  void aLeaseAPassFindsTakenIsLostAloneAndTheOthersStayHeld(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      Witness witness = new Witness(null);
      LeaseManager m =
          f.track(f.builder(f.pool(2), "batch").timings(TIMINGS).listener(witness).build());
      List<Lease> leases = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        leases.add(m.tryClaim("taken-" + i).orElseThrow().hold());
      }
      witness.next(p -> p.renewed() == 5);
      Lease victim = leases.get(2);
      try (Connection c = f.admin.getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "UPDATE " + f.table + " SET holder = 'thief', term = term + 1 WHERE name = ?")) {
        ps.setString(1, victim.name());
        assertEquals(1, ps.executeUpdate());
        if (!c.getAutoCommit()) {
          c.commit();
        }
      }
      PassSeen p = witness.next(s -> s.lost() > 0);
      assertEquals(new PassSeen(5, 4, 1, 0, 0), p, "one lost, four renewed by the same pass");
      assertTrue(victim.isLost());
      assertEquals(LossReason.NOT_HELD, victim.lossReason().orElseThrow());
      PassSeen after = witness.next(s -> true);
      assertEquals(4, after.leases(), "the lost lease is no longer renewed");
      assertEquals(4, after.renewed());
      for (Lease l : leases) {
        assertEquals(l != victim, l.isHeld(), l.toString());
      }
    }
  }

  @OnEveryDatabase
  void aPassThatFailsIsFollowedByOneThatRenewsThemAll(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      Witness witness = new Witness(null);
      LeaseManager m =
          f.track(f.builder(failing, "batch").timings(TIMINGS).listener(witness).build());
      List<Lease> leases = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        leases.add(m.tryClaim("failing-" + i).orElseThrow().hold());
      }
      witness.next(p -> p.renewed() == 3);
      failing.failing(true);
      PassSeen failed = witness.next(p -> p.failed() == 3);
      assertEquals(0, failed.renewed());
      failing.failing(false);
      witness.next(p -> p.renewed() == 3);
      for (Lease l : leases) {
        assertTrue(l.isHeld(), l + " is still held after a failed pass");
      }
      assertTrue(witness.outcomes.get(RenewalOutcome.ERROR).get() >= 3, "errors counted");
      assertFalse(witness.outcomes.containsKey(RenewalOutcome.LOST), "nothing lost");
    }
  }
}
