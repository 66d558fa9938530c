package dev.lease.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.group.GroupListener;
import dev.lease.core.group.LeaseGroup;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Rebalancing time of a {@link LeaseGroup} of {@code keys} keys on the database, one shot per
 * invocation: three members (each its own manager and pool, as three processes would have) share
 * the keys fairly; then a fourth member joins ({@code join}: measured until every member holds at
 * most {@code ceil(keys / 4)} and every key is held) or one of four drains ({@code drain}: measured
 * from {@code drain()} until the three others hold every key fairly). Members pass every {@code
 * passMs}. {@code moves}: {@code batch} (the default: a member above its share releases its whole
 * surplus in one pass, one statement per 1,000 keys, so a join takes two passes of the peers) or
 * {@code one} ({@code shedOneKeyPerPass()}: about {@code ceil(K/3) - ceil(K/4)} passes, so the time
 * scales with the pass interval); a drain needs one pass of the peers either way. The passes each
 * shot took are printed ({@code passes of the slowest member}).
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 3)
@Fork(value = 1, jvmArgsAppend = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
@State(Scope.Benchmark)
public class GroupRebalanceBenchmark {

  /** Renewals every 3 s: the keepers' load stays out of the passes' way. */
  static final LeaseTimings TIMINGS =
      LeaseTimings.builder()
          .leaseDuration(Duration.ofSeconds(12))
          .renewInterval(Duration.ofSeconds(3))
          .localDeadline(Duration.ofSeconds(9))
          .attemptTimeout(Duration.ofSeconds(3))
          .gracePeriod(Duration.ofMillis(100))
          .build();

  @Param({"postgresql", "mariadb"})
  public String database;

  @Param({"join", "drain"})
  public String change;

  @Param({"1000", "10000"})
  public int keys;

  @Param({"batch", "one"})
  public String moves;

  @Param({"10"})
  public int passMs;

  final List<Member> members = new ArrayList<>();
  String table;
  List<String> keyNames;

  /** One process of the group. */
  final class Member {
    final HikariDataSource pool;
    final LeaseManager manager;
    final LeaseGroup group;
    final AtomicInteger passes = new AtomicInteger();

    Member(TestDatabase db, String name) {
      pool = db.pooled(4);
      manager =
          LeaseManager.builder(pool)
              .table(table)
              .instance(name)
              .timings(TIMINGS)
              .failurePolicy(FailurePolicy.logOnly())
              .createTableIfMissing()
              .build();
      LeaseGroup.Builder b =
          LeaseGroup.builder(manager, "bench")
              .keys(() -> keyNames)
              .passInterval(Duration.ofMillis(passMs))
              .createTableIfMissing()
              .listener(
                  new GroupListener() {
                    @Override
                    public void passCompleted(String g, int held, int share, int live) {
                      passes.incrementAndGet();
                    }
                  });
      if ("one".equals(moves)) {
        b.shedOneKeyPerPass();
      }
      group = b.build();
      group.start();
    }

    void close() {
      group.close();
      manager.close();
      pool.close();
    }
  }

  @Setup(Level.Invocation)
  public void setUp() {
    TestDatabase db = TestDatabase.valueOf(database.toUpperCase(Locale.ROOT));
    table = TestDatabase.uniqueTable("bench_group");
    keyNames = IntStream.range(0, keys).mapToObj(i -> String.format("key-%05d", i)).toList();
    int start = "join".equals(change) ? 3 : 4;
    for (int i = 0; i < start; i++) {
      members.add(new Member(db, "m" + i));
    }
    awaitFair(members);
  }

  @Benchmark
  public int rebalance() {
    TestDatabase db = TestDatabase.valueOf(database.toUpperCase(Locale.ROOT));
    List<Member> sharers;
    if ("join".equals(change)) {
      members.add(new Member(db, "m3"));
      sharers = members;
    } else {
      members.get(0).group.drain();
      sharers = members.subList(1, members.size());
    }
    members.forEach(m -> m.passes.set(0));
    awaitFair(sharers);
    return members.stream().mapToInt(m -> m.passes.get()).max().orElse(0);
  }

  @TearDown(Level.Invocation)
  public void tearDown() {
    System.out.printf(
        "%s %s %d keys, moves %s: passes of the slowest member %d%n",
        database,
        change,
        keys,
        moves,
        members.stream().mapToInt(m -> m.passes.get()).max().orElse(0));
    HikariDataSource admin = members.get(0).pool;
    for (int i = members.size() - 1; i >= 0; i--) {
      Member m = members.get(i);
      m.group.close();
      m.manager.close();
      if (i > 0) {
        m.pool.close();
      }
    }
    TestDatabase.dropQuietly(admin, table, table + "_members");
    admin.close();
    members.clear();
  }

  private void awaitFair(List<Member> sharers) {
    int m = sharers.size();
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
    while (true) {
      int sum = 0;
      boolean fair = true;
      for (Member s : members) {
        int held = s.group.held().size();
        sum += held;
        if (sharers.contains(s) ? held > (keys + m - 1) / m : held > 0) {
          fair = false;
        }
      }
      if (fair && sum == keys) {
        return;
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("no fair share among " + m + " members within 5 minutes");
      }
      Thread.onSpinWait();
      try {
        Thread.sleep(1); // polling interval of the measurement, not synchronisation
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
  }
}
