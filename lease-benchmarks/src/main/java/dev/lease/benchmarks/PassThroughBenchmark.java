package dev.lease.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.jdbc.FencedDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The wrapper's own cost with no lease bound, on an in-memory H2 database (no network, no disk):
 * raw HikariCP against {@link FencedDataSource} over it, in transactions of 1 and 5 statements.
 * Here a transaction takes microseconds, so the wrapper's share is visible; on a real database it
 * is a smaller share of a round trip. (H2 cannot hold leases: lease-core supports PostgreSQL,
 * MySQL, MariaDB and SQLite; the fenced variants are in {@link FencingBenchmark}.)
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 3)
@Measurement(iterations = 3, time = 3)
@Fork(value = 1, jvmArgsAppend = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
@State(Scope.Benchmark)
public class PassThroughBenchmark {

  private static final AtomicInteger DATABASES = new AtomicInteger();

  @Param({"raw", "no-lease"})
  public String variant;

  @Param({"1", "5"})
  public int statements;

  HikariDataSource pool;
  DataSource dataSource;

  @Setup(Level.Trial)
  public void setUp() throws SQLException {
    HikariConfig cfg = new HikariConfig();
    cfg.setJdbcUrl("jdbc:h2:mem:pass" + DATABASES.incrementAndGet() + ";DB_CLOSE_DELAY=-1");
    cfg.setAutoCommit(false);
    cfg.setMaximumPoolSize(8);
    cfg.setMinimumIdle(8);
    pool = new HikariDataSource(cfg);
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v BIGINT)");
      s.execute("INSERT INTO t SELECT x, 0 FROM SYSTEM_RANGE(0, 999)");
      c.commit();
    }
    dataSource = variant.equals("raw") ? pool : FencedDataSource.wrap(pool);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    pool.close();
  }

  @Benchmark
  @Threads(1)
  public long oneThread() throws SQLException {
    return transaction();
  }

  @Benchmark
  @Threads(8)
  public long eightThreads() throws SQLException {
    return transaction();
  }

  private long transaction() throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT v FROM t WHERE id = ?")) {
      long sum = 0;
      for (int i = 0; i < statements; i++) {
        ps.setInt(1, ThreadLocalRandom.current().nextInt(1000));
        try (java.sql.ResultSet rs = ps.executeQuery()) {
          rs.next();
          sum += rs.getLong(1);
        }
      }
      c.commit();
      return sum;
    }
  }
}
