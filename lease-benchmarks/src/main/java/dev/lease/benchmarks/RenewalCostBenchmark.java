package dev.lease.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.LifecycleRules;
import dev.lease.testing.CountingDataSource;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
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
 * The cost of keeping many leases: one process (one {@link LeaseManager}, a HikariCP pool of 4)
 * holds {@code leases} leases with {@code hold()}; one op is one renewal pass of all of them (what
 * the manager does once per renew interval), timed from its start to its last answer. Side by side:
 * {@code batched} (one statement per 1,000 leases) and {@code one-by-one} (a statement per lease,
 * as before batching; not run at 10,000, where a pass takes longer than a renew interval). The
 * trial prints {@code COST ...} lines: statements per pass counted by a counting DataSource (each
 * is one autocommit transaction), and on PostgreSQL the server's committed transactions per pass
 * ({@code pg_stat_database.xact_commit}, database-wide, so other clients of the server add to it).
 * The renew interval of the manager is set long (60 s), so that only the benchmark's passes run.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1, time = 3)
@Measurement(iterations = 3, time = 3)
@Fork(value = 1, jvmArgsAppend = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
@State(Scope.Benchmark)
public class RenewalCostBenchmark {

  @Param({"postgresql", "mariadb"})
  public String database;

  @Param({"1", "100", "1000", "10000"})
  public int leases;

  @Param({"batched", "one-by-one"})
  public String variant;

  HikariDataSource pool;
  CountingDataSource counting;
  LeaseManager manager;
  String table;
  boolean skipped;
  long passes;
  long statementsBefore;
  long xactsBefore;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    skipped = variant.equals("one-by-one") && leases > 1_000;
    if (skipped) {
      return;
    }
    TestDatabase db = TestDatabase.valueOf(database.toUpperCase(Locale.ROOT));
    HikariConfig cfg = new HikariConfig();
    cfg.setJdbcUrl(db.url());
    cfg.setMaximumPoolSize(4);
    cfg.setPoolName("renewal-cost-" + variant);
    pool = new HikariDataSource(cfg);
    counting = new CountingDataSource(pool);
    table = TestDatabase.uniqueTable("bench_renew");
    LeaseTimings timings =
        LeaseTimings.builder()
            .leaseDuration(Duration.ofMinutes(10))
            .renewInterval(Duration.ofSeconds(60))
            .localDeadline(Duration.ofMinutes(5))
            .attemptTimeout(Duration.ofSeconds(30))
            .build();
    LeaseManager.Builder b =
        LeaseManager.builder(counting)
            .table(table)
            .instance("bench")
            .timings(timings)
            .failurePolicy(FailurePolicy.logOnly())
            .createTableIfMissing();
    if (variant.equals("one-by-one")) {
      // the renewal before batching: a statement per lease (the benchmark's baseline)
      LeaseInternals.rulesForTesting(
          b,
          new LifecycleRules() {
            @Override
            public int renewalsPerStatement(int max) {
              return 1;
            }
          });
    }
    manager = b.build();
    createRows();
    List<Lease> held = new ArrayList<>();
    for (int i = 0; i < leases; i++) {
      held.add(manager.tryClaim("k-" + i).orElseThrow().hold());
    }
    statementsBefore = counting.statements();
    xactsBefore = xacts();
  }

  /** The rows in one statement, so that the setup's claims are one statement each. */
  private void createRows() throws SQLException {
    try (Connection c = pool.getConnection()) {
      for (int from = 0; from < leases; from += 1_000) {
        int n = Math.min(1_000, leases - from);
        String sql =
            "INSERT INTO " + table + " (name, term) VALUES " + "(?, 1), ".repeat(n - 1) + "(?, 1)";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
          for (int i = 0; i < n; i++) {
            ps.setString(i + 1, "k-" + (from + i));
          }
          ps.executeUpdate();
        }
      }
    }
  }

  /** PostgreSQL's committed transactions of this database; -1 elsewhere. */
  private long xacts() throws SQLException {
    if (!database.equals("postgresql")) {
      return -1;
    }
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      // a fresh snapshot of the statistics, not the one cached in this transaction
      s.execute("SELECT pg_stat_clear_snapshot()");
      try (ResultSet rs =
          s.executeQuery(
              "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws SQLException {
    if (skipped) {
      return;
    }
    long statements = counting.statements() - statementsBefore;
    long xacts = xacts() - xactsBefore;
    System.out.printf(
        "%nCOST database=%s leases=%d variant=%s passes=%d statements/pass=%.1f"
            + " xact_commit/pass=%s%n",
        database,
        leases,
        variant,
        passes,
        (double) statements / passes,
        xactsBefore < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f", (double) xacts / passes));
    manager.close();
    TestDatabase.dropQuietly(pool, table);
    pool.close();
  }

  @Benchmark
  public void renewalPass() throws Exception {
    if (skipped) {
      return;
    }
    LeaseInternals.renewalPassNow(manager).get(60, TimeUnit.SECONDS);
    passes++;
  }
}
