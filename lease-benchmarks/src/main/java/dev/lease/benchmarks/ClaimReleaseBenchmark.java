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
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
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

/**
 * One claim + release cycle of one name, one thread, HikariCP, side by side: this library ({@code
 * lease}: {@code tryClaim} then {@code release}), ShedLock 5.16's {@code JdbcLockProvider} ({@code
 * shedlock}: {@code lock} then {@code unlock}), and the floor, one durable single-row {@code
 * UPDATE} in autocommit ({@code floor}; a cycle writes twice, so 2× the floor is the physical
 * limit). Every cycle re-claims right after the release before; the trial prints how many of those
 * claims were refused ({@code RECLAIMS ...} lines): the lease clock is the database's, ShedLock's
 * timestamps come from the application's clock. Durability is each server's default (PostgreSQL
 * {@code synchronous_commit = on}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(value = 1, jvmArgsAppend = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
@State(Scope.Benchmark)
public class ClaimReleaseBenchmark {

  @Param({"postgresql", "mariadb"})
  public String database;

  @Param({"floor", "lease", "lease-sql", "shedlock"})
  public String variant;

  HikariDataSource pool;
  LeaseManager leases;
  JdbcLockProvider shedlock;
  String table;
  String floorUpdate;
  final AtomicLong claimed = new AtomicLong();
  final AtomicLong refused = new AtomicLong();

  @Setup(Level.Trial)
  public void setUp() throws SQLException {
    TestDatabase db = TestDatabase.valueOf(database.toUpperCase(Locale.ROOT));
    HikariConfig cfg = new HikariConfig();
    cfg.setJdbcUrl(db.url());
    cfg.setMaximumPoolSize(4);
    cfg.setPoolName("claim-release-" + variant);
    pool = new HikariDataSource(cfg);
    table = TestDatabase.uniqueTable("bench_" + variant.replace('-', '_'));
    switch (variant) {
      case "floor" -> {
        execute("CREATE TABLE " + table + " (id int PRIMARY KEY, v bigint NOT NULL)");
        execute("INSERT INTO " + table + " VALUES (1, 0)");
        floorUpdate = "UPDATE " + table + " SET v = v + 1 WHERE id = 1";
      }
      case "lease", "lease-sql" ->
          leases =
              LeaseManager.builder(pool)
                  .table(table)
                  .instance("bench")
                  .failurePolicy(FailurePolicy.logOnly())
                  .createTableIfMissing()
                  .build();
      case "shedlock" -> {
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
      }
      default -> throw new IllegalArgumentException(variant);
    }
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
    if (!variant.equals("floor")) {
      System.out.printf(
          "%nRECLAIMS database=%s variant=%s claimed=%d refused=%d%n",
          database, variant, claimed.get(), refused.get());
    }
    TestDatabase.dropQuietly(pool, table);
    pool.close();
  }

  @Benchmark
  public void cycle() throws SQLException {
    switch (variant) {
      case "floor" -> {
        try (Connection c = pool.getConnection();
            PreparedStatement ps = c.prepareStatement(floorUpdate)) {
          ps.executeUpdate();
        }
      }
      case "lease" -> {
        Optional<Lease> lease = leases.tryClaim("bench");
        if (lease.isPresent()) {
          claimed.incrementAndGet();
          lease.get().release();
        } else {
          refused.incrementAndGet();
        }
      }
      case "lease-sql" -> {
        Dialect d = LeaseInternals.dialect(leases);
        String holder = LeaseInternals.mintHolder(leases);
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
            claimed.incrementAndGet();
            d.releaseStep(c, "bench", holder, term, 5_000);
          } else {
            refused.incrementAndGet();
          }
        }
      }
      default -> {
        Optional<SimpleLock> lock =
            shedlock.lock(
                new LockConfiguration(
                    ClockProvider.now(), "bench", Duration.ofSeconds(15), Duration.ZERO));
        if (lock.isPresent()) {
          claimed.incrementAndGet();
          lock.get().unlock();
        } else {
          refused.incrementAndGet();
        }
      }
    }
  }
}
