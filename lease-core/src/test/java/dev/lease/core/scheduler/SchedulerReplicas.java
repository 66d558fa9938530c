package dev.lease.core.scheduler;

import static org.junit.jupiter.api.Assertions.fail;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Fixture;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.MonotonicClock;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;

/**
 * Scheduler replicas in one JVM on one test database and one lease table, and what they did: which
 * replica ran which instant (with the database time it started), and which instants the listeners
 * were told were skipped or superseded.
 */
final class SchedulerReplicas implements AutoCloseable {

  /** Short lease timings with generous margins: the machine is small and shared. */
  static final LeaseTimings TIMINGS = Fixture.timings(3000, 200, 2500, 1500, 2000);

  static final Duration POLL = Duration.ofMillis(100);

  /** One run of a round. */
  record Run(String replica, long instantMs, long startedAtDatabaseMs, boolean rerun) {}

  final TestDatabase db;
  final String table = TestDatabase.uniqueTable("sched");
  private final HikariDataSource shared;
  private final List<HikariDataSource> pools = new CopyOnWriteArrayList<>();
  private final List<LeaseManager> managers = new CopyOnWriteArrayList<>();
  private final List<LeaseScheduler> schedulers = new CopyOnWriteArrayList<>();

  final Map<Long, List<Run>> runs = new ConcurrentSkipListMap<>();
  final Map<Long, List<String>> skipped = new ConcurrentHashMap<>();
  final Map<Long, List<String>> superseded = new ConcurrentHashMap<>();

  SchedulerReplicas(TestDatabase db) {
    this.db = db;
    // SQLite: every replica must use the same file, so they share one pool
    this.shared = db.isSqlite() ? db.pooled(6) : null;
    if (shared != null) {
      pools.add(shared);
    }
  }

  DataSource dataSource() {
    if (shared != null) {
      return shared;
    }
    HikariDataSource ds = db.pooled(4);
    pools.add(ds);
    return ds;
  }

  /** A DataSource on the test database, for the test's own SQL. */
  DataSource dataSourceForSql() {
    return pools.isEmpty() ? dataSource() : pools.get(0);
  }

  /** A lease manager for replica {@code instance} whose process clock is {@code clock}. */
  LeaseManager manager(String instance, MonotonicClock clock) {
    LeaseManager m =
        LeaseInternals.clock(
                LeaseManager.builder(dataSource())
                    .table(table)
                    .instance(instance)
                    .timings(TIMINGS)
                    .failurePolicy(FailurePolicy.logOnly())
                    .listener(listener(instance))
                    .createTableIfMissing(),
                clock)
            .build();
    managers.add(m);
    return m;
  }

  LeaseManager manager(String instance) {
    return manager(instance, MonotonicClock.SYSTEM);
  }

  /** Starts a scheduler replica running {@code job} with {@code work} recorded first. */
  LeaseScheduler start(
      LeaseManager manager,
      String job,
      Schedule schedule,
      ScheduledJob.Work work,
      UnaryOperator<LeaseScheduler.Builder> configure) {
    String replica = manager.instance();
    LeaseScheduler s =
        configure
            .apply(
                LeaseScheduler.builder(manager)
                    .pollInterval(POLL)
                    .job(
                        job,
                        schedule,
                        round -> {
                          long at = databaseNow(LeaseInternals.dialect(round.lease().manager()));
                          runs.computeIfAbsent(
                                  round.instant().toEpochMilli(), k -> new CopyOnWriteArrayList<>())
                              .add(
                                  new Run(
                                      replica, round.instant().toEpochMilli(), at, round.rerun()));
                          work.run(round);
                        }))
            .build();
    schedulers.add(s);
    s.start();
    return s;
  }

  LeaseScheduler start(LeaseManager manager, String job, Schedule schedule) {
    return start(manager, job, schedule, round -> {}, b -> b);
  }

  int runCount(long instant) {
    return runs.getOrDefault(instant, List.of()).size();
  }

  private LeaseListener listener(String instance) {
    return new LeaseListener() {
      @Override
      public void instantSkipped(String job, long instantMs) {
        skipped.computeIfAbsent(instantMs, k -> new CopyOnWriteArrayList<>()).add(instance);
      }

      @Override
      public void instantSuperseded(String job, long instantMs) {
        superseded.computeIfAbsent(instantMs, k -> new CopyOnWriteArrayList<>()).add(instance);
      }
    };
  }

  /** The database clock, read on a plain connection (a replica's manager may be closed). */
  long databaseNow() {
    try {
      return databaseNow(LeaseInternals.dialect(managers.get(0)));
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The database clock in one plain statement (no lease session around it): cheap to record. */
  private long databaseNow(Dialect dialect) throws java.sql.SQLException {
    try (java.sql.Connection c = dataSourceForSql().getConnection()) {
      return dialect.now(c);
    }
  }

  /**
   * The checker: over the instants of {@code schedule} from the first to the last one that ran,
   * each ran exactly once or was reported skipped exactly once (never both), no instant off the
   * schedule ran, no round started before its instant or later than {@code maxLateMs} after it
   * (database clock), and at least {@code minRuns} ran.
   *
   * @throws AssertionError describing every violation
   */
  static void assertEachInstantOnce(
      Map<Long, List<Run>> runs,
      Map<Long, List<String>> skipped,
      Schedule schedule,
      int minRuns,
      long maxLateMs) {
    TreeMap<Long, List<Run>> ran = new TreeMap<>(runs);
    List<String> problems = new ArrayList<>();
    if (ran.size() < minRuns) {
      problems.add("only " + ran.size() + " instants ran, expected at least " + minRuns);
    }
    if (!ran.isEmpty()) {
      Instants instants = new Instants(schedule);
      TreeSet<Long> expected = new TreeSet<>();
      for (Long s = ran.firstKey(); s != null && s <= ran.lastKey(); s = instants.nextAfter(s)) {
        expected.add(s);
      }
      for (long s : expected) {
        int r = ran.getOrDefault(s, List.of()).size();
        int k = skipped.getOrDefault(s, List.of()).size();
        if (r + k != 1) {
          problems.add(
              "instant "
                  + s
                  + " ran "
                  + r
                  + " times "
                  + ran.getOrDefault(s, List.of())
                  + " and was reported skipped "
                  + k
                  + " times");
        }
      }
      for (Map.Entry<Long, List<Run>> e : ran.entrySet()) {
        if (!expected.contains(e.getKey())) {
          problems.add("instant " + e.getKey() + " is not on the schedule but ran " + e.getValue());
        }
        for (Run run : e.getValue()) {
          long late = run.startedAtDatabaseMs() - run.instantMs();
          if (late < 0 || late > maxLateMs) {
            problems.add(
                "instant "
                    + run.instantMs()
                    + " started "
                    + late
                    + " ms after it by the"
                    + " database clock: "
                    + run);
          }
        }
      }
    }
    if (!problems.isEmpty()) {
      throw new AssertionError(String.join("\n", problems));
    }
  }

  /** Snapshots of the recorded maps, taken before the replicas are closed. */
  Map<Long, List<Run>> runsSnapshot() {
    Map<Long, List<Run>> copy = new TreeMap<>();
    runs.forEach((k, v) -> copy.put(k, List.copyOf(v)));
    return Collections.unmodifiableMap(copy);
  }

  Map<Long, List<String>> skippedSnapshot() {
    Map<Long, List<String>> copy = new TreeMap<>();
    skipped.forEach((k, v) -> copy.put(k, List.copyOf(v)));
    return Collections.unmodifiableMap(copy);
  }

  /** Waits, with a deadline, until {@code condition} holds; polls every 20 ms. */
  static void awaitUntil(Duration deadline, BooleanSupplier condition, String what) {
    long end = System.nanoTime() + deadline.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - end > 0) {
        fail("timed out after " + deadline.toMillis() + " ms waiting until " + what);
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        fail("interrupted waiting until " + what);
      }
    }
  }

  /** Closes the schedulers, then the managers, drops the table and closes the pools. */
  @Override
  public void close() {
    schedulers.forEach(LeaseScheduler::close);
    managers.forEach(LeaseManager::close);
    if (!pools.isEmpty()) {
      TestDatabase.dropQuietly(pools.get(0), table);
    }
    pools.forEach(HikariDataSource::close);
  }
}
