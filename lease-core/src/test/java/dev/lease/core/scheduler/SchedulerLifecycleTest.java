package dev.lease.core.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Fixture;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.WeakenedLifecycle;
import dev.lease.core.WeakenedSql;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.ConnectionSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * The scheduler's share of the lifecycle: closing stops a round before it releases its lease and
 * never runs the failure policy; a round whose lease is lost after its work returned is finished,
 * not run again; the poll thread stops on an interrupt instead of spinning; a row deleted under a
 * running scheduler comes back with a term above every earlier one. Each with a negative control.
 */
class SchedulerLifecycleTest {

  private static final LeaseTimings TIMINGS = Fixture.timings(3_000, 200, 2_500, 1_500, 300);
  private static final Duration POLL = Duration.ofMillis(100);

  /** One instant, soon: an hourly schedule whose next instant is {@code inMs} from now. */
  private static Schedule soon(LeaseManager m, long inMs) {
    return Schedule.fixedRate(
        Duration.ofHours(1), Instant.ofEpochMilli(m.databaseTimeMillis() + inMs));
  }

  /** The slot columns of {@code name}: last instant on record and the unfinished one. */
  private static Long[] slots(Fixture f, String name) throws SQLException {
    try (Connection c = f.admin.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT slot_ms, unfinished_slot_ms, expires_at_ms FROM "
                    + f.table
                    + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        Long[] row = new Long[3];
        for (int i = 0; i < 3; i++) {
          long v = rs.getLong(i + 1);
          row[i] = rs.wasNull() ? null : v;
        }
        if (!c.getAutoCommit()) {
          c.commit();
        }
        return row;
      }
    }
  }

  // ---- closing stops the round first, never the failure policy ---------------------------------

  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void closingStopsARoundThatWillNotStopWithoutTheFailurePolicy(TestDatabase db) throws Exception {
    Fixture.assertControlled(
        db,
        SchedulerLifecycleTest::policyCallsClosingAStuckRound,
        0,
        "as shipped",
        WeakenedLifecycle.policyOnRelease(),
        1,
        "the old close ran the policy (by default: halt the JVM)");
  }

  private static int policyCallsClosingAStuckRound(Fixture f, WeakenedLifecycle fault)
      throws Exception {
    AtomicInteger policies = new AtomicInteger();
    LeaseManager.Builder b =
        f.builder(f.pool(3), "closing-" + fault)
            .timings(TIMINGS)
            .failurePolicy((lease, worker) -> policies.incrementAndGet());
    LeaseManager m = f.build(b, fault);
    String job = "stuck-" + fault;
    CountDownLatch started = new CountDownLatch(1);
    AtomicBoolean release = new AtomicBoolean();
    AtomicReference<Boolean> rowHeldAtInterrupt = new AtomicReference<>();
    LeaseScheduler s =
        runningScheduler(
            f,
            m,
            job,
            soon(m, 300),
            round -> {
              started.countDown();
              Fixture.ignoringInterrupts(
                  release::get,
                  () -> {
                    if (rowHeldAtInterrupt.get() == null) {
                      rowHeldAtInterrupt.set(slots(f, job)[2] > 0);
                    }
                  });
            });
    assertTrue(started.await(10, TimeUnit.SECONDS), "the round started");
    long before = System.nanoTime();
    s.close();
    long tookMs = Duration.ofNanos(System.nanoTime() - before).toMillis();
    assertTrue(tookMs >= 290, "close waited the grace period for the round: " + tookMs);
    assertEquals(Boolean.TRUE, rowHeldAtInterrupt.get(), "interrupted before the release");
    Long[] row = slots(f, job);
    assertEquals(0L, row[2], "then released");
    assertTrue(row[1] != null, "and left unfinished: it runs again once");
    release.set(true);
    return policies.get();
  }

  // ---- a lease lost after the work returned: finished, not run again ---------------------------

  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void aRoundWhoseLeaseIsLostAfterItsWorkReturnedIsFinished(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertEquals(1, runsWhenLostAfterReturn(f, null), "finished, never rerun");
      assertEquals(
          2,
          runsWhenLostAfterReturn(f, WeakenedLifecycle.lossAfterReturnIsALoss()),
          "negative control: counted as cut short, the round ran again");
      assertEquals(
          2,
          runsWhenLostAfterReturn(f, WeakenedScheduler.NO_FINISH_WITHOUT_LEASE),
          "negative control: without the finish without the lease, the round ran again");
    }
  }

  /** Runs of the one instant when its first round's lease is lost right after its work returned. */
  private static int runsWhenLostAfterReturn(Fixture f, Object fault) throws Exception {
    AtomicLong skew = new AtomicLong();
    AtomicBoolean loseOnce = new AtomicBoolean(true);
    LeaseManager.Builder b = f.builder(f.pool(3), "late-loss-" + fault).timings(TIMINGS);
    LeaseInternals.clock(b, () -> System.nanoTime() + skew.get());
    LeaseInternals.afterWorkForTesting(
        b,
        lease -> {
          if (loseOnce.getAndSet(false)) {
            // a pause past the local deadline, right after the work returned
            skew.addAndGet(Duration.ofSeconds(3).toNanos());
            assertFalse(lease.isHeld());
          }
        });
    if (fault instanceof WeakenedLifecycle w) {
      w.applyTo(b);
    }
    LeaseManager m = f.track(b.build());
    String job = "late-loss-" + fault;
    List<Boolean> runs = new CopyOnWriteArrayList<>();
    LeaseScheduler.Builder sb =
        LeaseScheduler.builder(m)
            .pollInterval(POLL)
            .job(job, soon(m, 300), r -> runs.add(r.rerun()));
    if (fault instanceof WeakenedScheduler w) {
      w.applyTo(sb);
    }
    LeaseScheduler s = f.track(sb.build());
    s.start();
    Fixture.await("the round ran", Duration.ofSeconds(10), () -> !runs.isEmpty());
    // a rerun, if any, comes within a few polls: the name is free and the instant unfinished
    long until = System.nanoTime() + Duration.ofMillis(1_000).toNanos();
    while (System.nanoTime() < until && runs.size() < 2) {
      Thread.sleep(20); // a bounded look for a rerun that must not come, not a synchronisation
    }
    s.close();
    return runs.size();
  }

  // ---- the poll thread and interrupts
  // ------------------------------------------------------------

  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void thePollThreadStopsOnAnInterruptInsteadOfSpinning(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      int polls = pollsAfterAnInterrupt(f, null);
      assertTrue(polls <= 1, "stopped polling: " + polls + " polls after the interrupt");
      int spinning = pollsAfterAnInterrupt(f, WeakenedScheduler.POLL_KEEPS_INTERRUPT);
      assertTrue(
          spinning >= 10, "negative control: the old poll thread spins: " + spinning + " polls");
    }
  }

  private static int pollsAfterAnInterrupt(Fixture f, WeakenedScheduler fault) throws Exception {
    Counting counting = new Counting(f.pool(2));
    // the poll thread is found by its name, which has the instance in it: one per database run
    String instance = "poll-" + f.db + "-" + fault;
    LeaseManager m = f.track(f.builder(counting, instance).timings(TIMINGS).build());
    LeaseScheduler.Builder sb =
        LeaseScheduler.builder(m)
            .pollInterval(Duration.ofSeconds(1))
            .job(
                "never-" + fault,
                Schedule.fixedRate(Duration.ofDays(365), Instant.parse("2100-01-01T00:00:00Z")),
                r -> {});
    if (fault != null) {
      fault.applyTo(sb);
    }
    LeaseScheduler s = f.track(sb.build());
    s.start();
    Fixture.await("the first poll", Duration.ofSeconds(5), () -> counting.calls.get() >= 2);
    Thread poller =
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().equals("lease-scheduler-poll-" + instance))
            .findFirst()
            .orElseThrow();
    int before = counting.calls.get();
    poller.interrupt();
    int polls;
    if (fault == null) {
      // the event: the poll thread ends; a poll already under way at the interrupt may still count
      poller.join(5_000);
      assertFalse(poller.isAlive(), "the poll thread ended");
      polls = counting.calls.get() - before;
    } else {
      // the control's event: polls pile up after the interrupt; a thread that kept its poll
      // interval of a second would make at most six within the bounded wait, not ten
      long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
      while (counting.calls.get() - before < 10 && System.nanoTime() - until < 0) {
        Thread.sleep(5); // polling a bounded wait, not a synchronisation
      }
      polls = counting.calls.get() - before;
    }
    s.close();
    return polls;
  }

  /** Counts the connections the scheduler borrows: one per poll. */
  private static final class Counting extends ConnectionSource {
    final DataSource delegate;
    final AtomicInteger calls = new AtomicInteger();

    Counting(DataSource delegate) {
      this.delegate = delegate;
    }

    @Override
    public Connection getConnection() throws SQLException {
      calls.incrementAndGet();
      return delegate.getConnection();
    }
  }

  // ---- a deleted row comes back above every earlier term ----------------------------------------

  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void aJobRowDeletedUnderARunningSchedulerComesBackWithAHigherTerm(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db)) {
      long[] terms = termsAroundADelete(f, null);
      assertTrue(
          terms[1] > terms[0], "term " + terms[1] + " after the delete, " + terms[0] + " before");
      long[] broken = termsAroundADelete(f, WeakenedSql.termFromZero());
      assertTrue(
          broken[1] <= broken[0],
          "negative control: a row recreated at term 0 repeats terms: "
              + broken[1]
              + " after "
              + broken[0]);
    }
  }

  /** The highest term of a round before the row is deleted, and the first one after. */
  private static long[] termsAroundADelete(Fixture f, WeakenedSql fault) throws Exception {
    LeaseManager.Builder b = f.builder(f.pool(3), "recreate-" + fault).timings(TIMINGS);
    LeaseManager m = f.build(b, fault);
    String job = "recreated-" + fault;
    Map<Long, Long> termByInstant = new ConcurrentHashMap<>();
    LeaseScheduler s =
        runningScheduler(
            f,
            m,
            job,
            Schedule.fixedRate(Duration.ofMillis(300), Instant.EPOCH),
            r -> termByInstant.put(r.instant().toEpochMilli(), r.lease().term()));
    Fixture.await("three rounds", Duration.ofSeconds(10), () -> termByInstant.size() >= 3);
    f.update("DELETE FROM " + f.table + " WHERE name = ?", job);
    // an instant after this was claimed after the delete: on the row the scheduler created again
    long deletedAt = m.databaseTimeMillis();
    Fixture.await(
        "a round after the delete",
        Duration.ofSeconds(10),
        () -> termByInstant.keySet().stream().anyMatch(i -> i > deletedAt));
    s.close();
    long before =
        termByInstant.entrySet().stream()
            .filter(e -> e.getKey() < deletedAt)
            .mapToLong(Map.Entry::getValue)
            .max()
            .orElseThrow();
    long after =
        termByInstant.entrySet().stream()
            .filter(e -> e.getKey() > deletedAt)
            .mapToLong(Map.Entry::getValue)
            .min()
            .orElseThrow();
    return new long[] {before, after};
  }

  /** A started scheduler of {@code m} (polling every {@link #POLL}) with the one job given. */
  private static LeaseScheduler runningScheduler(
      Fixture f, LeaseManager m, String job, Schedule schedule, ScheduledJob.Work work) {
    LeaseScheduler s =
        f.track(LeaseScheduler.builder(m).pollInterval(POLL).job(job, schedule, work).build());
    s.start();
    return s;
  }
}
