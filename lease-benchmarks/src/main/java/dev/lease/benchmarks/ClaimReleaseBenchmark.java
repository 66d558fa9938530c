package dev.lease.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbc.JdbcLockProvider;
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
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

/**
 * One claim + release cycle of one name, one thread, HikariCP, side by side: this library ({@code
 * lease}: {@code tryClaim} then {@code release}), the same two statements without the manager
 * ({@code lease-sql}), ShedLock 5.16's {@code JdbcLockProvider} ({@code shedlock}: {@code lock}
 * then {@code unlock}), and the floor, one durable single-row {@code UPDATE} in autocommit ({@code
 * floor}; a cycle writes twice, so 2× the floor is the physical limit). Every cycle re-claims right
 * after the release before; the trial prints how many of those claims were refused ({@code RECLAIMS
 * ...} lines): the lease clock is the database's, ShedLock's timestamps come from the application's
 * clock. Durability is each server's default (PostgreSQL {@code synchronous_commit = on}).
 *
 * <p>{@code variant=side-by-side} runs the four in turn within each operation, in blocks of {@link
 * #BLOCK} cycles (the order rotates), so a change of the machine's load falls on all of them alike;
 * the trial prints each variant's median block ({@code SIDE-BY-SIDE ...} lines), which is what to
 * compare. The single variants run one after another, each its own trial: their figures move with
 * the load between trials.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(value = 1, jvmArgsAppend = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
@State(Scope.Benchmark)
public class ClaimReleaseBenchmark {

  /** Cycles of one variant in a row, in {@code side-by-side}. */
  static final int BLOCK = 50;

  static final List<String> VARIANTS = List.of("floor", "lease", "lease-sql", "shedlock");

  @Param({"postgresql", "mariadb"})
  public String database;

  @Param({"floor", "lease", "lease-sql", "shedlock", "side-by-side"})
  public String variant;

  HikariDataSource pool;
  LeaseManager leases;
  JdbcLockProvider shedlock;
  final List<String> tables = new ArrayList<>();
  String floorUpdate;

  /** What a variant does in one cycle. */
  private interface Cycle {
    void run() throws SQLException;
  }

  /** Per variant: its cycle, re-claims claimed and refused, and (side by side) block times. */
  private static final class Runs {
    final Cycle cycle;
    long claimed;
    long refused;
    final List<Double> blockMicros = new ArrayList<>();

    Runs(Cycle cycle) {
      this.cycle = cycle;
    }
  }

  private final Map<String, Runs> runs = new LinkedHashMap<>();
  private boolean measuring;
  private int rotation;

  @Setup(Level.Trial)
  public void setUp() throws SQLException {
    TestDatabase db = TestDatabase.valueOf(database.toUpperCase(Locale.ROOT));
    HikariConfig cfg = new HikariConfig();
    cfg.setJdbcUrl(db.url());
    cfg.setMaximumPoolSize(4);
    cfg.setPoolName("claim-release-" + variant);
    pool = new HikariDataSource(cfg);
    for (String v : variant.equals("side-by-side") ? VARIANTS : List.of(variant)) {
      runs.put(v, new Runs(prepare(db, v)));
    }
  }

  @Setup(Level.Iteration)
  public void iteration(IterationParams params) {
    measuring = params.getType() == IterationType.MEASUREMENT;
  }

  private Cycle prepare(TestDatabase db, String v) throws SQLException {
    switch (v) {
      case "floor" -> {
        String table = table(v);
        execute("CREATE TABLE " + table + " (id int PRIMARY KEY, v bigint NOT NULL)");
        execute("INSERT INTO " + table + " VALUES (1, 0)");
        floorUpdate = "UPDATE " + table + " SET v = v + 1 WHERE id = 1";
        return () -> {
          try (Connection c = pool.getConnection();
              PreparedStatement ps = c.prepareStatement(floorUpdate)) {
            ps.executeUpdate();
          }
        };
      }
      case "lease" -> {
        LeaseManager m = manager();
        return () -> {
          Optional<Lease> lease = m.tryClaim("bench");
          Runs r = runs.get("lease");
          if (lease.isPresent()) {
            r.claimed++;
            lease.get().release();
          } else {
            r.refused++;
          }
        };
      }
      case "lease-sql" -> {
        LeaseManager m = manager();
        Dialect d = LeaseInternals.dialect(m);
        return () -> {
          String holder = LeaseInternals.mintHolder(m);
          Runs r = runs.get("lease-sql");
          try (Connection c = pool.getConnection()) {
            Long term = d.claimStep(c, "bench", holder, "bench", 15_000, 5_000).term();
            if (term == null) {
              Dialect.ClaimResult again =
                  d.createRowStep(c, "bench", 5_000)
                      ? d.claimStep(c, "bench", holder, "bench", 15_000, 5_000)
                      : new Dialect.ClaimResult(null, true);
              term = again.term();
            }
            if (term != null) {
              r.claimed++;
              d.releaseStep(c, "bench", holder, term, 5_000);
            } else {
              r.refused++;
            }
          }
        };
      }
      case "shedlock" -> {
        String table = table(v);
        // the DDL of ShedLock's README for each database
        execute(
            "CREATE TABLE "
                + table
                + " (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP"
                + (db == TestDatabase.POSTGRESQL ? "" : "(3)")
                + " NOT NULL, locked_at TIMESTAMP"
                + (db == TestDatabase.POSTGRESQL ? "" : "(3)")
                + " NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))");
        shedlock = new JdbcLockProvider(pool, table);
        return () -> {
          Optional<SimpleLock> lock =
              shedlock.lock(
                  new LockConfiguration(
                      ClockProvider.now(), "bench", Duration.ofSeconds(15), Duration.ZERO));
          Runs r = runs.get("shedlock");
          if (lock.isPresent()) {
            r.claimed++;
            lock.get().unlock();
          } else {
            r.refused++;
          }
        };
      }
      default -> throw new IllegalArgumentException(v);
    }
  }

  /** The one lease manager of the trial ({@code lease} and {@code lease-sql} share its table). */
  private LeaseManager manager() {
    if (leases == null) {
      leases =
          LeaseManager.builder(pool)
              .table(table("lease"))
              .instance("bench")
              .failurePolicy(FailurePolicy.logOnly())
              .createTableIfMissing()
              .build();
    }
    return leases;
  }

  private String table(String v) {
    String t = TestDatabase.uniqueTable("bench_" + v.replace('-', '_'));
    tables.add(t);
    return t;
  }

  private void execute(String sql) throws SQLException {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (leases != null) {
      leases.close();
    }
    Double floor = median(runs.containsKey("floor") ? runs.get("floor").blockMicros : List.of());
    for (Map.Entry<String, Runs> e : runs.entrySet()) {
      Runs r = e.getValue();
      if (!e.getKey().equals("floor")) {
        System.out.printf(
            "%nRECLAIMS database=%s variant=%s claimed=%d refused=%d%n",
            database, e.getKey(), r.claimed, r.refused);
      }
      Double median = median(r.blockMicros);
      if (median != null) {
        System.out.printf(
            Locale.ROOT,
            "SIDE-BY-SIDE database=%s variant=%s blocks=%d median_us=%.0f min_us=%.0f"
                + " max_us=%.0f x_floor=%.2f%n",
            database,
            e.getKey(),
            r.blockMicros.size(),
            median,
            r.blockMicros.stream().mapToDouble(Double::doubleValue).min().orElse(0),
            r.blockMicros.stream().mapToDouble(Double::doubleValue).max().orElse(0),
            floor == null ? Double.NaN : median / floor);
      }
    }
    TestDatabase.dropQuietly(pool, tables.toArray(new String[0]));
    pool.close();
  }

  private static Double median(List<Double> values) {
    if (values.isEmpty()) {
      return null;
    }
    List<Double> sorted = new ArrayList<>(values);
    sorted.sort(null);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  @Benchmark
  public void cycle() throws SQLException {
    if (runs.size() == 1) {
      runs.values().iterator().next().cycle.run();
      return;
    }
    // side by side: each variant a block of cycles, the order rotating from one operation to the
    // next
    List<Runs> all = new ArrayList<>(runs.values());
    int first = rotation++ % all.size();
    for (int i = 0; i < all.size(); i++) {
      Runs r = all.get((first + i) % all.size());
      long t0 = System.nanoTime();
      for (int k = 0; k < BLOCK; k++) {
        r.cycle.run();
      }
      if (measuring) {
        r.blockMicros.add((System.nanoTime() - t0) / 1_000.0 / BLOCK);
      }
    }
  }
}
