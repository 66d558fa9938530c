package dev.lease.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
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
 * Transactions per second, side by side: raw HikariCP ({@code raw}), {@link FencedDataSource} over
 * it with no lease bound ({@code no-lease}), with a lease bound in {@link FencingMode#VERIFY}
 * ({@code verify}) and in {@link FencingMode#STRICT}: the verify as a statement of its own ({@code
 * strict-separate}, {@link FencingOptions.Builder#piggybackVerify} off) and carried in the first
 * statement's round trip where the driver allows it ({@code strict}, the default; PostgreSQL, and
 * MySQL/MariaDB with {@code multiQueries=true}); transactions of 1 and 5 {@code UPDATE}s by primary
 * key (ids sorted, so concurrent transactions cannot deadlock), at 1 and 8 threads, with relaxed
 * and with durable commits. The pool has {@code autoCommit=false}; each transaction borrows a
 * connection, runs its statements and commits, retrying when the database refuses it for contention
 * (SQLite's single writer); only committed transactions count. The lease is held by a keeper
 * renewing every 2 s, as in production.
 *
 * <p>The separate verify costs one extra round trip per transaction; carried along, none. The
 * databases are shared with whatever else runs on the machine, so compare variants of one run, not
 * runs.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 3)
@Measurement(iterations = 3, time = 3)
@Fork(value = 1, jvmArgsAppend = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
@State(Scope.Benchmark)
public class FencingBenchmark {

  static final int ROWS = 1000;

  @Param({"postgresql", "mariadb", "sqlite"})
  public String database;

  @Param({"raw", "no-lease", "verify", "strict-separate", "strict"})
  public String variant;

  /**
   * {@code relaxed}: commit durability relaxed per session where the database allows it (PostgreSQL
   * {@code synchronous_commit = off}, SQLite {@code synchronous = NORMAL}; MariaDB has no
   * per-session setting: {@code innodb_flush_log_at_trx_commit} is global, left as the server has
   * it). {@code durable}: the server's settings.
   */
  /**
   * MySQL/MariaDB ({@code mysql}: Connector/J, {@code mariadb}: MariaDB Connector/J, both against
   * the MariaDB server): {@code true} connects with {@code allowMultiQueries=true}, with which
   * STRICT carries the verify in the first statement's round trip; without it the verify is a
   * statement of its own. Ignored on the other databases.
   */
  @Param({"false"})
  public boolean multiQueries;

  @Param({"relaxed", "durable"})
  public String durability;

  @Param({"1", "5"})
  public int statements;

  HikariDataSource pool;
  DataSource dataSource;
  LeaseManager leases;
  Lease lease;
  String table;
  String leaseTable;
  String update;

  @Setup(Level.Trial)
  public void setUp() throws SQLException {
    TestDatabase db = TestDatabase.valueOf(database.toUpperCase(Locale.ROOT));
    HikariConfig cfg = new HikariConfig();
    try (HikariDataSource template = db.pooled(8)) {
      template.copyStateTo(cfg);
    }
    if (multiQueries && db.isMySqlFamily()) {
      cfg.setJdbcUrl(cfg.getJdbcUrl() + "&allowMultiQueries=true");
    }
    cfg.setPoolName(
        "bench-" + database + (multiQueries ? "-multi" : "") + "-" + variant + "-" + durability);
    cfg.setAutoCommit(false);
    cfg.setMaximumPoolSize(8);
    cfg.setMinimumIdle(8);
    // Durability relaxed per session, so that the disk's fsync at every commit does not drown the
    // difference being measured (round trips and CPU); MariaDB's is a global setting, left alone.
    boolean relaxed = durability.equals("relaxed");
    if (db == TestDatabase.POSTGRESQL && relaxed) {
      cfg.setConnectionInitSql("SET synchronous_commit = off");
    } else if (db.isSqlite() && relaxed) {
      // not as connectionInitSql: that runs after autoCommit=false, inside sqlite-jdbc's BEGIN
      cfg.getDataSource().unwrap(org.sqlite.SQLiteDataSource.class).setSynchronous("NORMAL");
    }
    pool = new HikariDataSource(cfg);
    table = TestDatabase.uniqueTable("bench");
    leaseTable = TestDatabase.uniqueTable("bench_leases");
    update = "UPDATE " + table + " SET v = v + 1 WHERE id = ?";
    CounterTable.create(pool, table, ROWS);
    leases =
        LeaseManager.builder(pool)
            .table(leaseTable)
            .instance("bench")
            .failurePolicy(FailurePolicy.logOnly())
            .createTableIfMissing()
            .build();
    switch (variant) {
      case "raw":
        dataSource = pool;
        break;
      case "no-lease":
        dataSource = FencedDataSource.wrap(pool);
        break;
      case "verify":
      case "strict-separate":
      case "strict":
        lease = leases.tryClaim("bench").orElseThrow().hold();
        dataSource =
            FencedDataSource.wrap(
                pool,
                FencingOptions.builder()
                    .mode(variant.equals("verify") ? FencingMode.VERIFY : FencingMode.STRICT)
                    .piggybackVerify(!variant.equals("strict-separate"))
                    .build());
        break;
      default:
        throw new IllegalArgumentException("variant " + variant);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    leases.close(); // releases the lease
    TestDatabase.dropQuietly(pool, table, leaseTable);
    pool.close();
  }

  /** Binds the lease (if the variant has one) to each benchmark thread. */
  @State(Scope.Thread)
  public static class Bound {
    LeaseContext.Scope scope;

    @Setup(Level.Trial)
    public void bind(FencingBenchmark b) {
      if (b.lease != null) {
        scope = LeaseContext.bind(b.lease);
      }
    }

    @TearDown(Level.Trial)
    public void unbind() {
      if (scope != null) {
        scope.close();
      }
    }
  }

  @Benchmark
  @Threads(1)
  public int oneThread(Bound bound) throws SQLException {
    return transaction();
  }

  @Benchmark
  @Threads(8)
  public int eightThreads(Bound bound) throws SQLException {
    return transaction();
  }

  private int transaction() throws SQLException {
    int[] ids = ids();
    while (true) {
      try (Connection c = dataSource.getConnection()) {
        try (PreparedStatement ps = c.prepareStatement(update)) {
          int changed = 0;
          for (int id : ids) {
            ps.setInt(1, id);
            changed += ps.executeUpdate();
          }
          c.commit();
          return changed;
        } catch (SQLException e) {
          c.rollback();
          if (e instanceof LeaseLostSQLException) {
            // the lease is gone: counting refusals as transactions would measure nothing
            throw e;
          }
          // refused for contention (SQLite's single writer, a deadlock victim): the transaction
          // did not happen; run it again, as an application would
          Thread.yield();
        }
      }
    }
  }

  private int[] ids() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    int[] ids = new int[statements];
    for (int i = 0; i < statements; i++) {
      ids[i] = r.nextInt(ROWS);
    }
    Arrays.sort(ids);
    return ids;
  }
}
