package dev.lease.core.group;

import dev.lease.core.Fixture;
import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.LossReason;
import dev.lease.testing.FailingDataSource;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * The world of the group tests: one lease table on one database, members (each its own manager on
 * its own pool, so a member can be killed by making its pool fail), passes run in rounds (every
 * participant's pass at once, each on its own thread), and the checks: no key with two holders in
 * one term, terms only grow per key, {@code onReleasing} sees the row still held (the release has
 * not run yet), and the fair share.
 */
final class GroupWorld implements AutoCloseable {

  static final LeaseTimings TIMINGS = Fixture.timings(5000, 1500, 4000, 2000, 200);

  final Fixture fixture;
  final String group = "g";
  final List<String> keys;
  final List<Member> members = new ArrayList<>();
  final ExecutorService threads = Executors.newCachedThreadPool();

  /** (key, term) → member that acquired it. */
  private final Map<String, String> holderOfTerm = new ConcurrentHashMap<>();

  private final Map<String, Long> lastTerm = new HashMap<>();

  /** Invariant violations found, in order. */
  final List<String> violations = new CopyOnWriteArrayList<>();

  final AtomicInteger orderingChecks = new AtomicInteger();
  final AtomicInteger failedPasses = new AtomicInteger();

  /** The messages of the passes the database refused, in order. */
  final List<String> failures = new CopyOnWriteArrayList<>();

  final AtomicInteger acquisitions = new AtomicInteger();

  /**
   * Keys lost (renewals that failed past the local deadline on a loaded machine): a lost key's row
   * can stay unclaimable until it expires, so a convergence window with losses is timed, not
   * counted in passes.
   */
  final AtomicInteger losses = new AtomicInteger();

  volatile long lastLossNanos;

  GroupWorld(TestDatabase db, int keyCount) {
    this.fixture = new Fixture(db);
    this.keys = IntStream.range(0, keyCount).mapToObj(i -> String.format("key-%04d", i)).toList();
  }

  /** One process of the group. */
  final class Member implements GroupCallbacks {
    final String name;
    final FailingDataSource ds;

    /** What this member sends (inside the failing wrapper: a killed member sends nothing). */
    final dev.lease.testing.CountingDataSource counting;

    final LeaseManager manager;
    final LeaseGroup group;
    final Map<String, Lease> leases = new ConcurrentHashMap<>();
    volatile boolean killed;

    Member(
        String name,
        WeakenedGroup fault,
        Supplier<? extends List<String>> candidates,
        java.util.function.Consumer<LeaseGroup.Builder> options) {
      this.name = name;
      // SQLite: commits without an fsync each (as FencingBenchmark does), so that the renewals of
      // 1,000 leases, one transaction each until the manager renews in batches, do not queue
      // behind the disk on a loaded machine
      this.counting =
          new dev.lease.testing.CountingDataSource(
              fixture.pool(
                  8,
                  cfg -> {
                    if (fixture.db.isSqlite()) {
                      try {
                        cfg.getDataSource()
                            .unwrap(org.sqlite.SQLiteDataSource.class)
                            .setSynchronous("NORMAL");
                      } catch (java.sql.SQLException e) {
                        throw new AssertionError(e);
                      }
                    }
                  }));
      this.ds = new FailingDataSource(counting);
      this.manager =
          fixture.track(
              fixture
                  .builder(ds, name)
                  .timings(TIMINGS)
                  .listener(
                      new LeaseListener() {
                        @Override
                        public void lost(Lease lease, LossReason reason) {
                          if (!killed) {
                            losses.incrementAndGet(); // at the loss, not at the next pass
                            lastLossNanos = System.nanoTime();
                          }
                        }
                      })
                  .build());
      LeaseGroup.Builder b =
          LeaseGroup.builder(manager, GroupWorld.this.group)
              .keys(candidates)
              .callbacks(this)
              .passInterval(Duration.ofMillis(100))
              .createTableIfMissing();
      if (fault != null) {
        fault.applyTo(b);
      }
      options.accept(b);
      this.group = fixture.track(b.build());
    }

    @Override
    public void onAcquired(String key, Lease lease) {
      acquisitions.incrementAndGet();
      leases.put(key, lease);
      String before = holderOfTerm.putIfAbsent(key + "@" + lease.term(), name);
      if (before != null && !before.equals(name)) {
        violations.add(key + " term " + lease.term() + " has two holders: " + before + ", " + name);
      }
      synchronized (lastTerm) {
        Long last = lastTerm.put(key, lease.term());
        if (last != null && last >= lease.term()) {
          violations.add(key + " term " + lease.term() + " acquired after term " + last);
        }
      }
    }

    @Override
    public void onReleasing(String key) {
      Lease lease = leases.remove(key);
      if (lease == null) {
        return;
      }
      Fixture.Row row = fixture.row(key);
      if (lease.isLost()) {
        return; // lost meanwhile (read after the row): the manager gave the row back, not the group
      }
      orderingChecks.incrementAndGet();
      // the row as the database has it, and the lease's own state: a peer passing at the same time
      // may already have claimed a row released too early, so the row alone can miss it
      boolean rowReleased =
          row != null
              && row.holder().equals(lease.holder())
              && row.term() == lease.term()
              && row.expiresAtMs() == 0;
      if (rowReleased || lease.isReleased()) {
        violations.add(
            key
                + " term "
                + lease.term()
                + " was released before onReleasing returned"
                + (rowReleased ? " (its row shows the release)" : " (the lease says released)"));
      }
    }

    @Override
    public void onLost(String key) {
      leases.remove(key);
    }

    int held() {
      return heldNow().size();
    }

    /**
     * The keys whose lease this member still holds: a lease lost since its last pass is reported at
     * the next one, and may already be another member's.
     */
    Set<String> heldNow() {
      Set<String> now = new HashSet<>();
      for (String k : group.held()) {
        if (group.lease(k).isPresent()) {
          now.add(k);
        }
      }
      return now;
    }

    /** Killed without release: its database connections fail from now on, and it passes no more. */
    void kill() {
      killed = true;
      ds.failing(true);
    }

    @Override
    public String toString() {
      return name;
    }
  }

  Member join(String name) {
    return join(name, null);
  }

  Member join(String name, WeakenedGroup fault) {
    return join(name, fault, b -> {});
  }

  Member join(
      String name, WeakenedGroup fault, java.util.function.Consumer<LeaseGroup.Builder> options) {
    Member m = new Member(name, fault, () -> keys, options);
    members.add(m);
    return m;
  }

  /** The members that pass: not killed. */
  List<Member> participants() {
    return members.stream().filter(m -> !m.killed).toList();
  }

  /** The members that count for the share: not killed, not draining. */
  List<Member> sharers() {
    return participants().stream().filter(m -> !m.group.isDraining()).toList();
  }

  /**
   * One pass of every participant, all at once. A pass that failed (an attempt timed out on a
   * loaded machine) is run again at once, up to three times, and recorded in {@link #failures}.
   */
  void round() {
    List<Future<?>> passes = new ArrayList<>();
    for (Member m : participants()) {
      passes.add(
          threads.submit(
              () -> {
                for (int attempt = 1; ; attempt++) {
                  try {
                    return m.group.runPass();
                  } catch (LeaseException e) {
                    failedPasses.incrementAndGet();
                    failures.add(m + ": " + e.getMessage());
                    if (attempt == 3) {
                      throw e;
                    }
                  }
                }
              }));
    }
    for (Future<?> f : passes) {
      try {
        f.get(60, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof LeaseException)) {
          throw new AssertionError(e.getCause());
        }
      } catch (InterruptedException | TimeoutException e) {
        throw new AssertionError(e);
      }
    }
  }

  /**
   * Runs rounds until the keys are shared fairly among {@link #sharers()}; fails after {@code
   * maxPasses} rounds (plus one for each pass the database refused). Returns the rounds it took.
   */
  int converge(String after, int maxPasses) {
    int lossesBefore = losses.get();
    long deadline = System.nanoTime() + 2 * TIMINGS.leaseDuration().toNanos();
    for (int round = 1; ; round++) {
      round();
      if (fair()) {
        return round;
      }
      if (round >= maxPasses) {
        int lost = losses.get() - lossesBefore;
        // a lost key's row may stay unclaimable until it expires: wait that long after the last
        // loss
        long until = Math.max(deadline, lastLossNanos + 2 * TIMINGS.leaseDuration().toNanos());
        if (lost > 0 && System.nanoTime() - until < 0) {
          if (round == maxPasses) {
            System.out.printf(
                "%s: %d keys lost to an overloaded machine after %s; waiting for their rows%n",
                fixture.db, lost, after);
          }
          continue;
        }
        throw new AssertionError(
            "no convergence to the fair share ±1 within "
                + maxPasses
                + " passes after "
                + after
                + ": "
                + counts()
                + (lost > 0 ? " (" + lost + " keys lost meanwhile)" : ""));
      }
    }
  }

  /**
   * Every key held by exactly one sharer and each sharer within the fair share: at most {@code
   * ceil(K / M)} and at least {@code floor(K / M) - 1}.
   */
  boolean fair() {
    List<Member> sharers = sharers();
    int m = sharers.size();
    int k = keys.size();
    Set<String> all = new HashSet<>();
    int sum = 0;
    for (Member s : participants()) {
      Set<String> held = s.heldNow();
      sum += held.size();
      all.addAll(held);
      if (!sharers.contains(s) && !held.isEmpty()) {
        return false;
      }
    }
    if (sum != k || all.size() != k) {
      return false;
    }
    for (Member s : sharers) {
      int n = s.held();
      if (n > (k + m - 1) / m || n < k / m - 1) {
        return false;
      }
    }
    return true;
  }

  String counts() {
    return members.stream()
        .map(
            m ->
                m.name
                    + (m.killed ? "(killed)" : m.group.isDraining() ? "(draining)" : "")
                    + "="
                    + m.held())
        .collect(Collectors.joining(", "));
  }

  /** Which instance the database has as the live holder of each key (expired rows left out). */
  Map<String, String> liveHoldersInDatabase() {
    return fixture.liveHolders(Long.toString(databaseNow()));
  }

  /** The database clock, ms, read through one of the managers. */
  long databaseNow() {
    return members.stream()
        .filter(m -> !m.killed)
        .findFirst()
        .orElseThrow()
        .manager
        .databaseTimeMillis();
  }

  /** Heartbeat (database clock ms) of {@code m}'s row, or null if it has none. */
  Long heartbeat(Member m) {
    try (Connection c = fixture.admin.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT heartbeat_ms FROM " + fixture.table + "_members WHERE member = ?")) {
      ps.setString(1, m.group.member());
      try (ResultSet rs = ps.executeQuery()) {
        Long v = rs.next() ? rs.getLong(1) : null;
        if (!c.getAutoCommit()) {
          c.commit();
        }
        return v;
      }
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  void assertNoViolations() {
    if (!violations.isEmpty()) {
      throw new AssertionError(violations.size() + " violations, first: " + violations.get(0));
    }
  }

  @Override
  public void close() {
    for (Member m : members) {
      m.ds.failing(false);
      m.group.close();
    }
    threads.shutdownNow();
    TestDatabase.dropQuietly(fixture.admin, fixture.table + "_members");
    fixture.close();
  }
}
