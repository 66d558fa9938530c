package dev.lease.jdbc.internal.fence;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.MonotonicClock;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import org.sqlite.Function;
import org.sqlite.SQLiteConnection;

/**
 * One database of a test: a pool, a lease table, a data table {@code (id, term)} and lease managers
 * on it. Counts the fencing events of every connection made through {@link #options()}.
 */
final class Fixture implements AutoCloseable {

  final TestDatabase db;
  final HikariDataSource pool;
  final String leaseTable;
  final String data;
  final AtomicInteger verified = new AtomicInteger();
  final AtomicInteger refused = new AtomicInteger();
  final AtomicInteger poisoned = new AtomicInteger();

  /** The holder manager's process clock: real time plus {@link #skew}, movable by tests. */
  final AtomicLong skew = new AtomicLong();

  private final List<AutoCloseable> closeables = new ArrayList<>();

  final LeaseListener counter =
      new LeaseListener() {
        @Override
        public void transactionVerified(Lease lease) {
          verified.incrementAndGet();
        }

        @Override
        public void transactionRefused(Lease lease) {
          refused.incrementAndGet();
        }

        @Override
        public void transactionPoisoned(Lease lease) {
          poisoned.incrementAndGet();
        }
      };

  Fixture(TestDatabase db, int poolSize) throws SQLException {
    this(db, poolSize, false);
  }

  /**
   * @param multiQueries MySQL/MariaDB: connect with {@code allowMultiQueries=true}, so that texts
   *     of several statements reach the server as they do for applications that turn it on
   */
  Fixture(TestDatabase db, int poolSize, boolean multiQueries) throws SQLException {
    this.db = db;
    this.pool =
        multiQueries && db.isMySqlFamily() ? multiQueryPool(db, poolSize) : db.pooled(poolSize);
    this.leaseTable = TestDatabase.uniqueTable("jl");
    this.data = TestDatabase.uniqueTable("jd");
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE "
              + data
              + " (id INTEGER NOT NULL PRIMARY KEY, term BIGINT NOT NULL,"
              + " note VARCHAR(40))");
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }

  private static HikariDataSource multiQueryPool(TestDatabase db, int poolSize) {
    com.zaxxer.hikari.HikariConfig cfg = new com.zaxxer.hikari.HikariConfig();
    cfg.setJdbcUrl(db.url() + "&allowMultiQueries=true");
    cfg.setMaximumPoolSize(poolSize);
    cfg.setMinimumIdle(0);
    cfg.setConnectionTimeout(10_000);
    cfg.setPoolName(db + "-multi-" + TestDatabase.uniqueTable("p"));
    return new HikariDataSource(cfg);
  }

  /** A manager on this database whose process clock is the test's ({@link #skew}). */
  LeaseManager manager(String instance, LeaseTimings timings) {
    MonotonicClock clock = () -> System.nanoTime() + skew.get();
    return manager(instance, timings, clock);
  }

  /** {@code name} claimed by a new manager of instance "holder" with the default timings. */
  Lease holding(String name) {
    return manager("holder", LeaseTimings.DEFAULTS).tryClaim(name).orElseThrow();
  }

  LeaseManager manager(String instance, LeaseTimings timings, MonotonicClock clock) {
    return manager(pool, instance, timings, clock);
  }

  LeaseManager manager(DataSource ds, String instance, LeaseTimings timings, MonotonicClock clock) {
    LeaseManager m =
        LeaseInternals.clock(
                LeaseManager.builder(ds)
                    .table(leaseTable)
                    .instance(instance)
                    .timings(timings)
                    .failurePolicy(FailurePolicy.logOnly())
                    .createTableIfMissing(),
                clock)
            .build();
    closeables.add(0, m);
    return m;
  }

  FencingOptions.Builder options() {
    return FencingOptions.builder().listener(counter);
  }

  FencedDataSource fenced(FencingOptions options) {
    return FencedDataSource.wrap(pool, options);
  }

  <T extends AutoCloseable> T closeLater(T c) {
    closeables.add(0, c);
    return c;
  }

  /**
   * MySQL/MariaDB, on {@code other}'s session in autocommit: a successor's claim of {@code lease}'s
   * row that waits at most 3 s for a transaction holding it. Whether it got through.
   */
  boolean takeOverWaiting(Connection other, Lease lease) throws SQLException {
    try (Statement s = other.createStatement()) {
      s.execute("SET SESSION innodb_lock_wait_timeout = 3");
    }
    other.setAutoCommit(true);
    try {
      giveToSuccessor(other, lease);
      return true;
    } catch (SQLException lockWait) {
      return false;
    }
  }

  /** Makes the database give {@code lease}'s name to someone else, as a successor's claim would. */
  void takeOver(Lease lease) throws SQLException {
    try (Connection c = pool.getConnection()) {
      giveToSuccessor(c, lease);
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }

  /** On {@code c}: the successor's claim of {@code lease}'s row (holder "successor", next term). */
  private void giveToSuccessor(Connection c, Lease lease) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE " + leaseTable + " SET holder = 'successor', term = term + 1 WHERE name = ?")) {
      ps.setString(1, lease.name());
      ps.executeUpdate();
    }
  }

  /**
   * PostgreSQL: whether a claim's {@code FOR UPDATE} could lock the lease row now (a {@code NOWAIT}
   * lock that fails with {@code 55P03} means a transaction holds it; any other error is thrown).
   */
  boolean pgLeaseRowFree() throws SQLException {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      try {
        s.executeQuery("SELECT name FROM " + leaseTable + " FOR UPDATE NOWAIT").close();
        return true;
      } catch (SQLException e) {
        if (!"55P03".equals(e.getSQLState())) {
          throw e;
        }
        return false;
      } finally {
        c.rollback();
      }
    }
  }

  /** Runs {@code sql} on a pooled connection without a fence (a test's set-up or clean-up). */
  void execute(String sql) throws SQLException {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }

  int count(String where) throws SQLException {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT COUNT(*) FROM " + data + (where == null ? "" : " WHERE " + where))) {
      rs.next();
      int n = rs.getInt(1);
      if (!c.getAutoCommit()) {
        c.commit();
      }
      return n;
    }
  }

  /** Counts rows of the data table on {@code c}, inside its transaction. */
  int count(Connection c, String where) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + data + " WHERE " + where)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** Inserts {@code (id, term)} into the data table on {@code c}. */
  void insert(Connection c, int id, long term) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("INSERT INTO " + data + " (id, term) VALUES (?, ?)")) {
      ps.setInt(1, id);
      ps.setLong(2, term);
      ps.executeUpdate();
    }
  }

  @Override
  public void close() {
    for (AutoCloseable c : closeables) {
      try {
        c.close();
      } catch (Exception e) {
        // best effort
      }
    }
    TestDatabase.dropQuietly(pool, data, leaseTable);
    pool.close();
  }

  // ---- a statement that runs long, and waiting until it does

  /**
   * A query that runs about 30 s: {@code pg_sleep}, {@code SLEEP}, or on SQLite a long recursive
   * count that calls {@code signal} on every row ({@link #signalWhenRunning}).
   */
  static String longQuery(TestDatabase db) {
    switch (db) {
      case POSTGRESQL:
        return "SELECT pg_sleep(30)";
      case SQLITE:
        return "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
            + " WHERE x < 4000000000) SELECT count(signal(x)) FROM c";
      default:
        return "SELECT SLEEP(30)";
    }
  }

  /** What a worker does on its connection after its long query ended. */
  interface AfterLongQuery {
    void run(Connection c) throws SQLException;
  }

  /**
   * A worker thread under a lease: what ended its long query ({@code queryError}, null if nothing)
   * and what it threw ({@code failure}).
   */
  record Worker(
      Thread thread,
      AtomicReference<SQLException> queryError,
      AtomicReference<Throwable> failure) {}

  /**
   * Starts a worker that, on a connection of {@code ds} under {@code lease}, begins a transaction,
   * inserts row 1, runs {@link #longQuery} and then {@code then}; returns it once the query runs.
   */
  Worker longQueryUnderLease(DataSource ds, Lease lease, AfterLongQuery then) throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    AtomicReference<SQLException> queryError = new AtomicReference<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread worker =
        new Thread(
            () -> {
              try (Connection c = ds.getConnection()) {
                signalWhenRunning(c, db, running);
                try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
                  c.setAutoCommit(false);
                  insert(c, 1, lease.term());
                  queryError.set(runLongQuery(c, db));
                  then.run(c);
                }
                c.setAutoCommit(true);
              } catch (Throwable e) {
                failure.set(e);
              }
            },
            "worker-under-lease");
    worker.start();
    awaitRunning(running, longQuery(db));
    return new Worker(worker, queryError, failure);
  }

  /** Runs {@link #longQuery} on {@code c} to its end: the error that ended it, or null. */
  static SQLException runLongQuery(Connection c, TestDatabase db) {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(longQuery(db))) {
      rs.next();
      return null;
    } catch (SQLException e) {
      return e;
    }
  }

  /** On SQLite, {@code c}'s {@code signal} function counts {@code running} down (a no-op else). */
  static void signalWhenRunning(Connection c, TestDatabase db, CountDownLatch running)
      throws SQLException {
    if (!db.isSqlite()) {
      return;
    }
    Function.create(
        c.unwrap(SQLiteConnection.class),
        "signal",
        new Function() {
          @Override
          protected void xFunc() throws SQLException {
            running.countDown();
            result(1);
          }
        });
  }

  /**
   * Waits (with a deadline of 10 s) until {@code query} is running on the server; on SQLite until
   * {@code sqlite} is counted down (a function the query calls).
   */
  void awaitRunning(CountDownLatch sqlite, String query) throws Exception {
    if (db.isSqlite()) {
      if (!sqlite.await(10, TimeUnit.SECONDS)) {
        throw new AssertionError("the query never started: " + query);
      }
      return;
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() - deadline < 0) {
      if (isRunning(query)) {
        return;
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
    throw new AssertionError("the query never started: " + query);
  }

  /** Whether {@code query} is running on the server now (PostgreSQL, MySQL/MariaDB). */
  boolean isRunning(String query) throws SQLException {
    String probe =
        db == TestDatabase.POSTGRESQL
            ? "SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query = ?"
            : "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = ?";
    try (Connection c = pool.getConnection();
        PreparedStatement ps = c.prepareStatement(probe)) {
      ps.setString(1, query);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1) > 0;
      }
    }
  }
}
