package dev.lease.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.testing.CountingDataSource;
import dev.lease.testing.PgWire;
import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * What a fenced transaction costs beside a raw one, in figures that hold on a loaded machine (issue
 * 36): statements per transaction (counted below the fence), client CPU per transaction (the worker
 * threads' own CPU time, {@code ThreadMXBean}), server CPU per transaction (PostgreSQL: the
 * backends' {@code /proc/<pid>/schedstat}; MariaDB: the whole {@code mariadbd} process's, every
 * thread, so background work is included), WAL bytes per transaction (PostgreSQL), and the
 * throughput ratio (which moves with the load). Raw, STRICT, and STRICT with a proof at every
 * commit (the mechanism before issue 36) run in alternating blocks in one run, each block in a
 * rotated order; each figure is the median over the blocks.
 *
 * <pre>
 * java -cp lease-benchmarks/target/benchmarks.jar dev.lease.benchmarks.FenceCost \
 *   [--databases postgresql,mariadb,mariadb-multi,sqlite] [--threads 1,8] [--statements 1,5]
 *   [--blocks 8] [--tx 200] [--relaxed]
 * </pre>
 *
 * {@code mariadb-multi} connects with {@code allowMultiQueries=true} (the verify then travels with
 * the first statement); {@code --relaxed} sets PostgreSQL's {@code synchronous_commit = off}.
 */
public final class FenceCost {

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final int ROWS = 1000;

  record Variant(String name, DataSource ds) {}

  /** One block's sums for one variant. */
  static final class Block {
    long tx;
    long wallNanos;
    long clientCpuNanos;
    long serverCpuNanos = -1;
    long walBytes = -1;
  }

  public static void main(String[] args) throws Exception {
    List<String> databases = List.of("postgresql", "mariadb", "mariadb-multi", "sqlite");
    List<Integer> threads = List.of(1, 8);
    List<Integer> statements = List.of(1, 5);
    int blocks = 8;
    int txPerBlock = 200;
    boolean relaxed = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--databases" -> databases = List.of(args[++i].split(","));
        case "--threads" -> threads = ints(args[++i]);
        case "--statements" -> statements = ints(args[++i]);
        case "--blocks" -> blocks = Integer.parseInt(args[++i]);
        case "--tx" -> txPerBlock = Integer.parseInt(args[++i]);
        case "--relaxed" -> relaxed = true;
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    THREADS.setThreadCpuTimeEnabled(true);
    System.out.printf(
        Locale.ROOT,
        "FenceCost: %d blocks of %d transactions per variant, %s commits, load %.1f%n%n",
        blocks,
        txPerBlock,
        relaxed ? "relaxed" : "durable",
        ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    System.out.println(
        "| database | threads | statements | variant | tx/s vs raw | statements/tx | client CPU"
            + " µs/tx | server CPU µs/tx | WAL B/tx |");
    System.out.println("|---|---|---|---|---|---|---|---|---|");
    for (String database : databases) {
      for (int t : threads) {
        for (int n : statements) {
          run(database, t, n, blocks, txPerBlock, relaxed);
        }
      }
    }
  }

  private static List<Integer> ints(String csv) {
    return Arrays.stream(csv.split(",")).map(Integer::parseInt).toList();
  }

  private static void run(
      String database, int threads, int statements, int blocks, int txPerBlock, boolean relaxed)
      throws Exception {
    boolean multi = database.endsWith("-multi");
    TestDatabase db = TestDatabase.valueOf(database.replace("-multi", "").toUpperCase(Locale.ROOT));
    String url = db.isSqlite() ? null : db.url();
    HikariConfig cfg = new HikariConfig();
    if (db.isSqlite()) {
      cfg.setDataSource(TestDatabase.sqliteDataSource(sqliteFile()));
    } else {
      String sep = url.contains("?") ? "&" : "?";
      cfg.setJdbcUrl(
          url
              + (multi ? sep + "allowMultiQueries=true" : "")
              + (db == TestDatabase.POSTGRESQL ? sep + "ApplicationName=fencecost" : ""));
    }
    cfg.setAutoCommit(false);
    cfg.setMaximumPoolSize(threads + 1);
    cfg.setMinimumIdle(threads + 1);
    cfg.setPoolName("fencecost-" + database + "-" + threads + "-" + statements);
    if (db == TestDatabase.POSTGRESQL && relaxed) {
      cfg.setConnectionInitSql("SET synchronous_commit = off");
    }
    String table = TestDatabase.uniqueTable("fcost");
    String leaseTable = TestDatabase.uniqueTable("fcost_leases");
    try (HikariDataSource pool = new HikariDataSource(cfg)) {
      CounterTable.create(pool, table, ROWS);
      try (LeaseManager leases =
          LeaseManager.builder(pool)
              .table(leaseTable)
              .instance("fencecost")
              .failurePolicy(FailurePolicy.logOnly())
              .createTableIfMissing()
              .build()) {
        Lease lease = leases.tryClaim("cost").orElseThrow().hold();
        List<Variant> variants = new ArrayList<>();
        variants.add(new Variant("raw", pool));
        variants.add(
            new Variant("STRICT", FencedDataSource.wrap(pool, FencingOptions.builder().build())));
        if (db == TestDatabase.POSTGRESQL) {
          variants.add(
              new Variant(
                  "STRICT, every commit proved (before issue 36)",
                  FencedDataSource.wrap(
                      pool,
                      PreviousMechanism.everyCommitProves(FencingOptions.builder()).build())));
        }
        String update = "UPDATE " + table + " SET v = v + 1 WHERE id = ?";
        // statements per transaction, counted below the fence on a connection of their own
        double[] counted = new double[variants.size()];
        for (int v = 0; v < variants.size(); v++) {
          counted[v] = countStatements(db, cfg, pool, variants.get(v), lease, update, statements);
        }
        long[] pgPids = db == TestDatabase.POSTGRESQL ? pgBackends(pool, threads) : null;
        long mariadbPid = db.isMySqlFamily() ? mariadbPid(pool) : -1;
        List<List<Block>> results = new ArrayList<>();
        variants.forEach(v -> results.add(new ArrayList<>()));
        for (int b = -2; b < blocks; b++) { // two warm-up rounds
          for (int k = 0; k < variants.size(); k++) {
            int v = Math.floorMod(b + k, variants.size());
            Block block =
                block(
                    pool,
                    variants.get(v).ds(),
                    lease,
                    update,
                    statements,
                    threads,
                    txPerBlock / threads,
                    db,
                    pgPids,
                    mariadbPid);
            if (b >= 0) {
              results.get(v).add(block);
            }
          }
        }
        double rawRate = rate(results.get(0));
        for (int v = 0; v < variants.size(); v++) {
          List<Block> r = results.get(v);
          System.out.printf(
              Locale.ROOT,
              "| %s | %d | %d | %s | %.2f | %.1f | %.0f | %s | %s |%n",
              database,
              threads,
              statements,
              variants.get(v).name(),
              rate(r) / rawRate,
              counted[v],
              median(r, x -> x.clientCpuNanos / 1000.0 / x.tx),
              r.get(0).serverCpuNanos < 0
                  ? "n/a"
                  : String.format(
                      Locale.ROOT, "%.0f", median(r, x -> x.serverCpuNanos / 1000.0 / x.tx)),
              r.get(0).walBytes < 0
                  ? "n/a"
                  : String.format(Locale.ROOT, "%.0f", median(r, x -> (double) x.walBytes / x.tx)));
        }
      } finally {
        TestDatabase.dropQuietly(pool, table, leaseTable);
      }
    }
  }

  private static String sqliteFile() throws IOException {
    Path dir = Files.createTempDirectory("fencecost");
    return dir.resolve("cost.db").toString();
  }

  /** One transaction: {@code statements} UPDATEs by primary key (ids sorted), then commit. */
  private static void transaction(Connection c, String update, int statements, int base)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(update)) {
      for (int i = 0; i < statements; i++) {
        ps.setInt(1, (base + i * 7) % ROWS);
        ps.executeUpdate();
      }
    }
    c.commit();
  }

  /**
   * Statements the server runs per transaction: PostgreSQL on the wire (a {@link PgWire} proxy:
   * Execute messages, {@code BEGIN} and {@code COMMIT} included); MariaDB by the server's global
   * {@code Questions} (what the lease keeper sends meanwhile included: a renewal every few
   * seconds); SQLite as the calls that reach the driver below the fence.
   */
  private static double countStatements(
      TestDatabase db,
      HikariConfig cfg,
      DataSource pool,
      Variant v,
      Lease lease,
      String update,
      int statements)
      throws Exception {
    int n = 20;
    if (db == TestDatabase.POSTGRESQL) {
      try (PgWire wire = new PgWire("127.0.0.1", 5432)) {
        DataSource ds = variantOver(v, new dev.lease.testing.UrlDataSource(wire.url()));
        return perTransaction(ds, lease, update, statements, n, wire::executes);
      }
    }
    if (db.isMySqlFamily()) {
      DataSource ds = variantOver(v, new dev.lease.testing.UrlDataSource(cfg.getJdbcUrl()));
      long idle = questions(pool) - questions(pool); // what reading it costs
      return perTransaction(ds, lease, update, statements, n, () -> questions(pool))
          + idle / (double) n;
    }
    CountingDataSource counting = new CountingDataSource(cfg.getDataSource());
    return perTransaction(variantOver(v, counting), lease, update, statements, n, counting::calls);
  }

  @FunctionalInterface
  interface Counter {
    long get() throws Exception;
  }

  private static double perTransaction(
      DataSource ds, Lease lease, String update, int statements, int n, Counter counter)
      throws Exception {
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      transaction(c, update, statements, 0); // warm: session set-up is not per transaction
      long before = counter.get();
      for (int i = 0; i < n; i++) {
        transaction(c, update, statements, i);
      }
      return (counter.get() - before) / (double) n;
    }
  }

  private static DataSource variantOver(Variant v, DataSource direct) {
    return switch (v.name()) {
      case "raw" -> direct;
      case "STRICT" -> FencedDataSource.wrap(direct, FencingOptions.builder().build());
      default ->
          FencedDataSource.wrap(
              direct, PreviousMechanism.everyCommitProves(FencingOptions.builder()).build());
    };
  }

  private static long questions(DataSource pool) throws SQLException {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW GLOBAL STATUS LIKE 'Questions'")) {
      rs.next();
      long q = rs.getLong(2);
      c.commit();
      return q;
    }
  }

  private static Block block(
      DataSource pool,
      DataSource ds,
      Lease lease,
      String update,
      int statements,
      int threads,
      int txPerThread,
      TestDatabase db,
      long[] pgPids,
      long mariadbPid)
      throws Exception {
    Block block = new Block();
    AtomicLong cpu = new AtomicLong();
    CyclicBarrier start = new CyclicBarrier(threads + 1);
    CountDownLatch done = new CountDownLatch(threads);
    List<Throwable> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
    for (int t = 0; t < threads; t++) {
      int seed = t * 131;
      Thread worker =
          new Thread(
              () -> {
                try (LeaseContext.Scope scope = LeaseContext.bind(lease);
                    Connection c = ds.getConnection()) {
                  c.setAutoCommit(false);
                  start.await();
                  long before = THREADS.getCurrentThreadCpuTime();
                  for (int i = 0; i < txPerThread; i++) {
                    transaction(c, update, statements, seed + i * 13);
                  }
                  cpu.addAndGet(THREADS.getCurrentThreadCpuTime() - before);
                } catch (Throwable e) {
                  errors.add(e);
                } finally {
                  done.countDown();
                }
              },
              "fencecost-" + t);
      worker.start();
    }
    long serverBefore = serverCpu(pgPids, mariadbPid);
    String walBefore = db == TestDatabase.POSTGRESQL ? walLsn(pool) : null;
    start.await();
    long began = System.nanoTime();
    done.await();
    block.wallNanos = System.nanoTime() - began;
    long serverAfter = serverCpu(pgPids, mariadbPid);
    if (!errors.isEmpty()) {
      throw new IllegalStateException("a worker failed", errors.get(0));
    }
    block.tx = (long) threads * txPerThread;
    block.clientCpuNanos = cpu.get();
    if (serverBefore >= 0 && serverAfter >= 0) {
      block.serverCpuNanos = serverAfter - serverBefore;
    }
    if (walBefore != null) {
      block.walBytes = walDiff(pool, walBefore);
    }
    return block;
  }

  private static double rate(List<Block> blocks) {
    return median(blocks, b -> b.tx / (b.wallNanos / 1e9));
  }

  private static double median(List<Block> blocks, java.util.function.ToDoubleFunction<Block> f) {
    double[] v = blocks.stream().mapToDouble(f).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  // ---- the server's side

  private static long[] pgBackends(DataSource pool, int threads) throws SQLException {
    // every pooled connection opened: the workers take them all
    List<Connection> held = new ArrayList<>();
    try {
      for (int i = 0; i < threads; i++) {
        held.add(pool.getConnection());
      }
    } finally {
      for (Connection c : held) {
        c.close();
      }
    }
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'fencecost'")) {
      List<Long> pids = new ArrayList<>();
      while (rs.next()) {
        pids.add(rs.getLong(1));
      }
      c.commit();
      return pids.stream().mapToLong(Long::longValue).toArray();
    }
  }

  private static long mariadbPid(DataSource pool) {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT @@pid_file")) {
      rs.next();
      String file = rs.getString(1);
      c.commit();
      return Long.parseLong(Files.readString(Path.of(file)).trim());
    } catch (SQLException | IOException | RuntimeException e) {
      return -1; // not on this machine: no server CPU
    }
  }

  /** CPU nanoseconds the server spent so far (the backends', or the whole process's), or -1. */
  private static long serverCpu(long[] pgPids, long mariadbPid) {
    try {
      if (pgPids != null) {
        long sum = 0;
        for (long pid : pgPids) {
          sum += schedstat(Path.of("/proc", Long.toString(pid), "schedstat"));
        }
        return sum;
      }
      if (mariadbPid > 0) {
        long sum = 0;
        try (DirectoryStream<Path> tasks =
            Files.newDirectoryStream(Path.of("/proc", Long.toString(mariadbPid), "task"))) {
          for (Path task : tasks) {
            sum += schedstat(task.resolve("schedstat"));
          }
        }
        return sum;
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return -1;
  }

  private static long schedstat(Path p) throws IOException {
    try {
      return Long.parseLong(Files.readString(p).trim().split("\\s+")[0]);
    } catch (java.nio.file.NoSuchFileException e) {
      return 0; // a thread that ended
    }
  }

  private static String walLsn(DataSource pool) throws SQLException {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_current_wal_lsn()::text")) {
      rs.next();
      String lsn = rs.getString(1);
      c.commit();
      return lsn;
    }
  }

  private static long walDiff(DataSource pool, String before) throws SQLException {
    try (Connection c = pool.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), ?::pg_lsn)")) {
      ps.setString(1, before);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        long d = rs.getLong(1);
        c.commit();
        return d;
      }
    }
  }

  private FenceCost() {}
}
