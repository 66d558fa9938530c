package dev.lease.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.jdbc.FencedDataSource;
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
import org.openjdk.jmh.annotations.AuxCounters;
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
 * Raw, STRICT with the verify as a statement of its own, STRICT with the verify carried in the
 * first statement's round trip ({@link FencingOptions.Builder#piggybackVerify}), and VERIFY (no
 * lock on the lease row) carried along, interleaved transaction by transaction in one trial: each
 * benchmark thread runs the four in turn over the same HikariCP pool and adds each transaction's
 * time to its variant's counters ({@code rawNanos} / {@code rawTx} and so on, JMH secondary
 * results). On a shared machine whose load changes from second to second, variants measured one
 * after the other compare the load as much as the variants; interleaved, every variant sees the
 * same load. The ratio of mean transaction times is the figure to read ({@code
 * tools/piggyback-table.py} in this module makes the README table).
 *
 * <p>A fifth variant, {@code previous}, is STRICT carried along with the mechanism before issue 25
 * (the client reads the verify's empty result; the commit carries no proof): beside {@code carried}
 * (the server refuses, and on PostgreSQL every commit carries the verify in its round trip), it
 * shows what the server-side refusal and the commit proof cost.
 *
 * <p>Transactions of 1 and 5 {@code UPDATE}s by primary key (ids sorted), at 1 and 8 threads, with
 * relaxed commits ({@code synchronous_commit = off} on PostgreSQL; MariaDB has no per-session
 * durability setting, {@code innodb_flush_log_at_trx_commit} is global and left as the server has
 * it) and durable ones (the servers' settings). The lease is held by a keeper, as in production.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(value = 1, jvmArgsAppend = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
@State(Scope.Benchmark)
public class PiggybackBenchmark {

  static final int ROWS = 1000;

  @Param({"postgresql", "mariadb"})
  public String database;

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
  LeaseManager leases;
  Lease lease;
  String table;
  String leaseTable;
  String update;

  /** raw, STRICT separate, STRICT carried, VERIFY carried, STRICT carried (previous). */
  DataSource[] variants;

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
        "piggy-" + database + (multiQueries ? "-multi" : "") + "-" + durability + "-" + statements);
    cfg.setAutoCommit(false);
    cfg.setMaximumPoolSize(8);
    cfg.setMinimumIdle(8);
    if (db == TestDatabase.POSTGRESQL && durability.equals("relaxed")) {
      cfg.setConnectionInitSql("SET synchronous_commit = off");
    }
    pool = new HikariDataSource(cfg);
    table = TestDatabase.uniqueTable("pbench");
    leaseTable = TestDatabase.uniqueTable("pbench_leases");
    update = "UPDATE " + table + " SET v = v + 1 WHERE id = ?";
    CounterTable.create(pool, table, ROWS);
    leases =
        LeaseManager.builder(pool)
            .table(leaseTable)
            .instance("bench")
            .failurePolicy(FailurePolicy.logOnly())
            .createTableIfMissing()
            .build();
    lease = leases.tryClaim("bench").orElseThrow().hold();
    variants =
        new DataSource[] {
          pool,
          FencedDataSource.wrap(pool, FencingOptions.builder().piggybackVerify(false).build()),
          FencedDataSource.wrap(pool, FencingOptions.builder().piggybackVerify(true).build()),
          FencedDataSource.wrap(
              pool,
              FencingOptions.builder()
                  .mode(dev.lease.jdbc.FencingMode.VERIFY)
                  .piggybackVerify(true)
                  .build()),
          FencedDataSource.wrap(
              pool, PreviousMechanism.of(FencingOptions.builder().piggybackVerify(true)).build())
        };
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    leases.close(); // releases the lease
    TestDatabase.dropQuietly(pool, table, leaseTable);
    pool.close();
  }

  /** Per thread: the lease bound, and each variant's transactions and their summed time. */
  @AuxCounters(AuxCounters.Type.EVENTS)
  @State(Scope.Thread)
  public static class Times {
    public long rawNanos;
    public long rawTx;
    public long separateNanos;
    public long separateTx;
    public long carriedNanos;
    public long carriedTx;
    public long verifyNanos;
    public long verifyTx;
    public long previousNanos;
    public long previousTx;

    int turn;
    LeaseContext.Scope scope;

    @Setup(Level.Trial)
    public void bind(PiggybackBenchmark b) {
      scope = LeaseContext.bind(b.lease);
      turn = ThreadLocalRandom.current().nextInt(5);
    }

    @Setup(Level.Iteration)
    public void reset() {
      rawNanos = rawTx = separateNanos = separateTx = carriedNanos = carriedTx = 0;
      verifyNanos = verifyTx = previousNanos = previousTx = 0;
    }

    @TearDown(Level.Trial)
    public void unbind() {
      scope.close();
    }
  }

  @Benchmark
  @Threads(1)
  public int oneThread(Times t) throws SQLException {
    return next(t);
  }

  @Benchmark
  @Threads(8)
  public int eightThreads(Times t) throws SQLException {
    return next(t);
  }

  private int next(Times t) throws SQLException {
    int variant = t.turn;
    t.turn = variant == 4 ? 0 : variant + 1;
    long start = System.nanoTime();
    int changed = transaction(variants[variant]);
    long took = System.nanoTime() - start;
    switch (variant) {
      case 0:
        t.rawNanos += took;
        t.rawTx++;
        break;
      case 1:
        t.separateNanos += took;
        t.separateTx++;
        break;
      case 2:
        t.carriedNanos += took;
        t.carriedTx++;
        break;
      case 3:
        t.verifyNanos += took;
        t.verifyTx++;
        break;
      default:
        t.previousNanos += took;
        t.previousTx++;
    }
    return changed;
  }

  private int transaction(DataSource dataSource) throws SQLException {
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
            throw e; // the lease is gone: counting refusals as transactions would measure nothing
          }
          Thread.yield(); // a deadlock victim: run it again, as an application would
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
