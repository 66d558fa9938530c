package dev.lease.core.scheduler;

import static dev.lease.core.scheduler.SchedulerReplicas.assertEachInstantOnce;
import static dev.lease.core.scheduler.SchedulerReplicas.awaitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseNames;
import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * The scheduler across replicas, on every database: each instant once, a round cut short runs again
 * once, overrun instants skipped, process clocks that disagree by minutes change nothing. Each
 * safety test has a negative control: the same scenario with a deliberately broken scheduler, which
 * the same checker must catch.
 */
class LeaseSchedulerTest {

  private static final Duration PERIOD = Duration.ofMillis(250);

  /**
   * How late a round may start by the database clock: generous, the machine is shared; a replica
   * that trusted a process clock minutes off would still be caught.
   */
  private static final long MAX_LATE_MS = 15_000;

  // ---- every instant runs exactly once across three replicas
  // -------------------------------------

  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void everyInstantRunsOnceAcrossThreeReplicas(TestDatabase db) {
    Outcome o = threeReplicas(db, 12, null, PERIOD);
    assertEachInstantOnce(o.runs, o.skipped, o.schedule, 12, MAX_LATE_MS);
  }

  /** Negative control: replicas that ignore the last instant on record run instants twice. */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void checkerCatchesReplicasThatIgnoreTheLastInstant(TestDatabase db) {
    // a longer period leaves time after each round for a broken replica to run the instant again,
    // even on a loaded machine
    Outcome o = threeReplicas(db, 6, WeakenedScheduler.IGNORE_LAST_INSTANT, Duration.ofSeconds(1));
    AssertionError caught =
        assertThrows(
            AssertionError.class,
            () -> assertEachInstantOnce(o.runs, o.skipped, o.schedule, 6, MAX_LATE_MS));
    assertTrue(
        java.util.regex.Pattern.compile("ran ([2-9]|[1-9][0-9]+) times")
            .matcher(caught.getMessage())
            .find(),
        caught.getMessage());
  }

  private record Outcome(
      Map<Long, List<SchedulerReplicas.Run>> runs,
      Map<Long, List<String>> skipped,
      Schedule schedule) {}

  private static Outcome threeReplicas(
      TestDatabase db, int instants, WeakenedScheduler fault, Duration period) {
    try (SchedulerReplicas r = new SchedulerReplicas(db)) {
      LeaseManager a = r.manager("a");
      Schedule schedule = Schedule.fixedRate(period, Instant.ofEpochMilli(a.databaseTimeMillis()));
      for (LeaseManager m : List.of(a, r.manager("b"), r.manager("c"))) {
        r.start(m, "report", schedule, round -> {}, b -> fault == null ? b : fault.applyTo(b));
      }
      awaitUntil(
          Duration.ofSeconds(40),
          () ->
              r.runs.size() >= instants
                  || (fault != null && r.runs.values().stream().anyMatch(v -> v.size() > 1)),
          instants + " instants ran");
      return new Outcome(r.runsSnapshot(), r.skippedSnapshot(), schedule);
    }
  }

  // ---- process clocks that disagree by minutes
  // ---------------------------------------------------

  private static final long[] OFFSETS_MS = {-5 * 60_000, 0, 7 * 60_000};

  /**
   * The replicas' process clocks are minutes apart (their monotonic clocks are offset, and the
   * scheduler never reads a wall clock): the database clock decides, each instant runs once, on
   * time.
   */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void replicasWhoseProcessClocksDisagreeByMinutesRunEachInstantOnce(TestDatabase db) {
    Outcome o = skewedReplicas(db, 8, false);
    assertEachInstantOnce(o.runs, o.skipped, o.schedule, 8, MAX_LATE_MS);
  }

  /**
   * Negative control: replicas that decide the due instant by their own process clocks (minutes
   * apart) run instants minutes late or never; the checker catches it.
   */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void checkerCatchesReplicasThatTrustTheirProcessClocks(TestDatabase db) {
    Outcome o = skewedReplicas(db, 6, true);
    AssertionError caught =
        assertThrows(
            AssertionError.class,
            () -> assertEachInstantOnce(o.runs, o.skipped, o.schedule, 6, MAX_LATE_MS));
    assertTrue(
        caught.getMessage().contains("ms after it by the database clock")
            || caught.getMessage().contains("ran 0 times"),
        caught.getMessage());
  }

  private static Outcome skewedReplicas(TestDatabase db, int instants, boolean trustProcessClock) {
    try (SchedulerReplicas r = new SchedulerReplicas(db)) {
      long dbNow = r.manager("probe").databaseTimeMillis();
      // the instants began an hour ago: a replica whose clock is behind sees old ones as due
      Schedule schedule = Schedule.fixedRate(PERIOD, Instant.ofEpochMilli(dbNow - 3_600_000));
      for (int i = 0; i < OFFSETS_MS.length; i++) {
        long offsetMs = OFFSETS_MS[i];
        long offsetNanos = offsetMs * 1_000_000L;
        LeaseManager m = r.manager("skew" + offsetMs, () -> System.nanoTime() + offsetNanos);
        r.start(
            m,
            "report",
            schedule,
            round -> {},
            b ->
                trustProcessClock
                    ? b.dueClockForTesting(() -> System.currentTimeMillis() + offsetMs)
                    : b);
        if (i == 0) {
          // the replica whose clock is furthest behind runs first on its own, so that the broken
          // variant deterministically runs an instant minutes old before the others claim anything
          awaitUntil(Duration.ofSeconds(20), () -> !r.runs.isEmpty(), "the first replica ran");
        }
      }
      awaitUntil(
          Duration.ofSeconds(40), () -> r.runs.size() >= instants, instants + " instants ran");
      return new Outcome(r.runsSnapshot(), r.skippedSnapshot(), schedule);
    }
  }

  // ---- a round longer than the period
  // ------------------------------------------------------------

  /**
   * The first round runs for about 3.5 periods: the three instants it overran are skipped, reported
   * once each, and run by no replica; the next instant runs on time.
   */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void instantsOverrunByALongRoundAreSkippedNeverRunLate(TestDatabase db) {
    Overrun o = overrun(db, null, 300, 150);
    assertOverrunSkipped(o);
  }

  /** Negative control: a finish that does not record the overrun lets a replica run one late. */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void checkerCatchesAnOverrunInstantRunLate(TestDatabase db) {
    // the long round ends just after the third overrun instant, leaving most of a long period for
    // the other replica to claim that instant late, even on a loaded machine
    Overrun o = overrun(db, WeakenedScheduler.NO_OVERRUN_RECORD, 800, 80);
    AssertionError caught = assertThrows(AssertionError.class, () -> assertOverrunSkipped(o));
    assertTrue(caught.getMessage().contains("overrun instant"), caught.getMessage());
  }

  private record Overrun(
      long first,
      long periodMs,
      Map<Long, List<SchedulerReplicas.Run>> runs,
      Map<Long, List<String>> skipped) {}

  private static void assertOverrunSkipped(Overrun o) {
    for (int k = 1; k <= 3; k++) {
      long s = o.first + k * o.periodMs;
      if (o.runs.containsKey(s)) {
        throw new AssertionError("overrun instant " + s + " ran late: " + o.runs.get(s));
      }
      assertEquals(
          1,
          o.skipped.getOrDefault(s, List.of()).size(),
          "overrun instant " + s + " reported skipped once: " + o.skipped);
    }
    assertTrue(
        o.runs.containsKey(o.first + 4 * o.periodMs)
            || o.skipped.containsKey(o.first + 4 * o.periodMs),
        "the instant after the overrun ran or was reported");
  }

  /** The first round ends {@code endAfterMs} after the third instant it overran. */
  private static Overrun overrun(
      TestDatabase db, WeakenedScheduler fault, long periodMs, long endAfterMs) {
    try (SchedulerReplicas r = new SchedulerReplicas(db)) {
      LeaseManager a = r.manager("a");
      long anchor = a.databaseTimeMillis() + 600;
      Schedule schedule =
          Schedule.fixedRate(Duration.ofMillis(periodMs), Instant.ofEpochMilli(anchor));
      ConcurrentSkipListSet<Long> longRound = new ConcurrentSkipListSet<>();
      ScheduledJob.Work work =
          round -> {
            long instant = round.instant().toEpochMilli();
            if (longRound.isEmpty() && longRound.add(instant)) {
              // the round itself is long: it ends after three more instants, by the database clock
              LeaseManager m = round.lease().manager();
              while (m.databaseTimeMillis() < instant + 3 * periodMs + endAfterMs) {
                Thread.sleep(20);
              }
            }
          };
      for (LeaseManager m : List.of(a, r.manager("b"))) {
        r.start(m, "report", schedule, work, b -> fault == null ? b : fault.applyTo(b));
      }
      awaitUntil(
          Duration.ofSeconds(40),
          () ->
              !longRound.isEmpty()
                  && r.runs.keySet().stream().anyMatch(s -> s >= longRound.first() + 4 * periodMs),
          "the long round and the next ran");
      return new Overrun(longRound.first(), periodMs, r.runsSnapshot(), r.skippedSnapshot());
    }
  }

  // ---- a round cut short
  // -------------------------------------------------------------------------

  /** How the second cut stops the replica running the rerun in the middle of its round. */
  private enum Stop {
    /** Its LeaseManager is closed without finishing: the lease is released, the round abandoned. */
    MANAGER_CLOSED,
    /** Its LeaseScheduler is closed: the round's thread is interrupted. */
    SCHEDULER_CLOSED
  }

  /**
   * Instant X's round is cut short twice: first its replica loses the lease (its row expires in the
   * database while the round runs), then the replica running the rerun has its LeaseManager closed
   * mid-round. X ran twice (once more after the first cut), never a third time, and when a later
   * instant is claimed X is reported superseded, once.
   */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void roundCutShortRunsAgainOnceThenNeverAndIsReported(TestDatabase db) throws Exception {
    CutShort o = cutShortTwice(db, null, Stop.MANAGER_CLOSED, 800);
    assertEquals(2, o.runsOfX, "X ran once and was rerun once");
    assertEquals(List.of(o.x), o.supersededInstants, "X reported superseded, once");
  }

  /** The same with the second cut made by closing the rerun's LeaseScheduler mid-round. */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void roundCutShortByClosingItsSchedulerIsNotRunAThirdTime(TestDatabase db) throws Exception {
    CutShort o = cutShortTwice(db, null, Stop.SCHEDULER_CLOSED, 800);
    assertEquals(2, o.runsOfX, "X ran once and was rerun once");
    assertEquals(List.of(o.x), o.supersededInstants, "X reported superseded, once");
  }

  /** Negative control: reruns without limit run X a third time, and X is never reported. */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void checkerCatchesAThirdRunOfAnInstantCutShortTwice(TestDatabase db) throws Exception {
    // the later instant comes late enough for the broken third run to happen first, even on a
    // loaded machine
    CutShort o =
        cutShortTwice(db, WeakenedScheduler.UNLIMITED_RERUNS, Stop.SCHEDULER_CLOSED, 2_500);
    assertThrows(AssertionError.class, () -> assertEquals(2, o.runsOfX));
  }

  private record CutShort(long x, int runsOfX, List<Long> supersededInstants) {}

  /** Cuts X short twice, then adds instant Y {@code laterMs} after the second cut. */
  private static CutShort cutShortTwice(
      TestDatabase db, WeakenedScheduler fault, Stop stop, long laterMs) throws Exception {
    try (SchedulerReplicas r = new SchedulerReplicas(db)) {
      LeaseManager a = r.manager("a");
      long x = a.databaseTimeMillis() + 700;
      ListSchedule schedule = new ListSchedule(x);
      CountDownLatch firstStarted = new CountDownLatch(1);
      CountDownLatch secondStarted = new CountDownLatch(1);
      ScheduledJob.Work work =
          round -> {
            if (round.instant().toEpochMilli() != x) {
              return;
            }
            int n = r.runCount(x);
            if (n == 1) {
              firstStarted.countDown();
            } else if (n == 2) {
              secondStarted.countDown();
            } else {
              return; // a third run (only the broken variant gets here) ends at once
            }
            new CountDownLatch(1).await(); // runs until it is interrupted
          };
      Map<String, LeaseManager> managers = new ConcurrentHashMap<>();
      Map<String, LeaseScheduler> schedulers = new ConcurrentHashMap<>();
      for (LeaseManager m : List.of(a, r.manager("b"), r.manager("c"))) {
        managers.put(m.instance(), m);
        schedulers.put(
            m.instance(),
            r.start(m, "nightly", schedule, work, b -> fault == null ? b : fault.applyTo(b)));
      }
      assertTrue(firstStarted.await(30, TimeUnit.SECONDS), "X started");
      // cut 1: the replica loses its lease (the row expires in the database, as after a long pause)
      expire(r.dataSourceForSql(), r.table, "nightly");
      assertTrue(secondStarted.await(30, TimeUnit.SECONDS), "X ran again");
      // cut 2: the replica running the rerun is stopped in the middle of the round
      String rerunBy = r.runs.get(x).get(1).replica();
      if (stop == Stop.MANAGER_CLOSED) {
        managers.get(rerunBy).close();
      } else {
        schedulers.get(rerunBy).close();
      }
      // a later instant: claiming it gives X up (or, broken, X ran a third time first)
      long y = r.databaseNow() + laterMs;
      schedule.add(y);
      awaitUntil(Duration.ofSeconds(30), () -> r.runCount(y) == 1, "Y ran");
      return new CutShort(
          x,
          r.runCount(x),
          List.copyOf(
              r.superseded.keySet().stream()
                  .flatMap(k -> r.superseded.get(k).stream().map(v -> k))
                  .toList()));
    }
  }

  private static void expire(DataSource ds, String table, String name) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("UPDATE " + table + " SET expires_at_ms = 0 WHERE name = ?")) {
      ps.setString(1, name);
      assertEquals(1, ps.executeUpdate());
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }

  // ---- start: a job that never ran, and one that missed instants --------------------------------

  /**
   * A job that never ran does not run instants from before it started; after every replica was down
   * while instants came due, the first replica back runs the latest missed instant at once (not the
   * next one, an hour later) and reports the instants before it, which no replica claimed, as
   * skipped.
   */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void onStartTheLastInstantOnRecordTellsANewJobFromMissedInstants(TestDatabase db) {
    try (SchedulerReplicas r = new SchedulerReplicas(db)) {
      LeaseManager a = r.manager("a");
      long t0 = a.databaseTimeMillis();
      long before = t0 - 5_000;
      long x1 = t0 + 600;
      long x2 = t0 + 3_000;
      long x3 = t0 + 3_300;
      long x4 = t0 + 3_600;
      long nextHour = t0 + 3_600_000;
      Schedule schedule = new ListSchedule(before, x1, x2, x3, x4, nextHour);
      LeaseScheduler first = r.start(a, "report", schedule);
      awaitUntil(
          Duration.ofSeconds(20),
          () -> {
            Dialect.SlotState st =
                LeaseInternals.execute(
                        a, "state", c -> LeaseInternals.dialect(a).slotStates(c, List.of("report")))
                    .byName()
                    .get("report");
            return st != null && Long.valueOf(x1).equals(st.lastMs()) && st.unfinishedMs() == null;
          },
          "the new job ran its first instant to its end");
      first.close();
      assertEquals(
          0, r.runCount(before), "a new job does not run an instant from before it started");
      assertEquals(1, r.runCount(x1));

      // every replica is down while x2, x3 and x4 come due
      awaitUntil(Duration.ofSeconds(20), () -> r.databaseNow() > x4 + 50, "x4 passed");
      assertEquals(0, r.runCount(x2) + r.runCount(x3) + r.runCount(x4), "nobody was up");
      r.start(r.manager("b"), "report", schedule);
      awaitUntil(Duration.ofSeconds(20), () -> r.runCount(x4) == 1, "the missed x4 ran");
      assertEquals(0, r.runCount(x2) + r.runCount(x3), "earlier missed instants are not run late");
      assertEquals(List.of("b"), r.skipped.get(x2), "x2 reported skipped once");
      assertEquals(List.of("b"), r.skipped.get(x3), "x3 reported skipped once");
      assertEquals(null, r.skipped.get(x4));
      assertEquals(0, r.runCount(nextHour));
    }
  }

  // ---- registration
  // ------------------------------------------------------------------------------

  @Test
  void aJobNameThatCouldNeverBeClaimedFailsAtRegistration() {
    Schedule s = Schedule.fixedRate(Duration.ofMinutes(1), Instant.EPOCH);
    IllegalArgumentException tooLong =
        assertThrows(
            IllegalArgumentException.class,
            () -> ScheduledJob.of("j".repeat(LeaseNames.MAX_LENGTH + 1), s, round -> {}));
    assertTrue(tooLong.getMessage().contains("could never be claimed"), tooLong.getMessage());
    assertThrows(IllegalArgumentException.class, () -> ScheduledJob.of("", s, round -> {}));
    assertThrows(IllegalArgumentException.class, () -> ScheduledJob.of("a\nb", s, round -> {}));
    assertThrows(
        IllegalArgumentException.class, () -> Schedule.fixedRate(Duration.ZERO, Instant.EPOCH));
  }

  @Test
  void fixedRateInstantsArePinnedToTheAnchor() {
    FixedRateSchedule s =
        new FixedRateSchedule(Duration.ofMillis(100), Instant.ofEpochMilli(1_000));
    assertEquals(1_000, s.nextAfterMs(0));
    assertEquals(1_100, s.nextAfterMs(1_000));
    assertEquals(1_100, s.nextAfterMs(1_099));
    assertEquals(null, s.latestIn(0, 999));
    assertEquals(1_000L, s.latestIn(0, 1_000));
    assertEquals(1_500L, s.latestIn(1_000, 1_550));
    assertEquals(null, s.latestIn(1_500, 1_550));
    // the general path (any Schedule) agrees with the arithmetic one
    Instants general = new Instants(after -> s.nextAfter(after));
    assertEquals(s.latestIn(1_000, 1_550), general.latestIn(1_000, 1_550));
    assertEquals(
        Optional.of(Instant.ofEpochMilli(1_200)), s.nextAfter(Instant.ofEpochMilli(1_100)));
    // skipped instants after a long outage: the first few reported one by one, the rest counted
    List<Long> reported = new java.util.ArrayList<>();
    assertEquals(87, new Instants(s).between(0, 10_000, 3, reported::add));
    assertEquals(List.of(1_000L, 1_100L, 1_200L), reported);
    assertEquals(87, general.between(0, 10_000, 3, x -> {}));
  }
}
