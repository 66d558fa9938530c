package dev.lease.core;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * One database-backed test's world: a fresh lease table on one {@link TestDatabase}, pools on it
 * (for SQLite all on the same file), managers, and clean-up. Managers built here never use the
 * halting failure policy: they record what the policy was asked to do, and {@link #close()} fails
 * the test if anything called it unexpectedly.
 */
public final class Fixture implements AutoCloseable {

  private static final AtomicInteger POOLS = new AtomicInteger();

  public final TestDatabase db;
  public final String table;

  /** For reading and writing the lease table directly (assertions, setup); never fails. */
  public final HikariDataSource admin;

  /** Works that a failure policy was called for, in order. */
  public final List<String> failurePolicyCalls = new CopyOnWriteArrayList<>();

  private final String sqliteFile;
  private final Deque<AutoCloseable> toClose = new ArrayDeque<>();

  public Fixture(TestDatabase db) {
    this.db = db;
    this.table = TestDatabase.uniqueTable("lease");
    this.sqliteFile = db.isSqlite() ? db.url().substring("jdbc:sqlite:".length()) : null;
    this.admin = pool(2);
    try (Connection c = admin.getConnection();
        var s = c.createStatement()) {
      for (String ddl : LeaseManager.ddl(database(db), table)) {
        s.execute(ddl);
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      throw new AssertionError("could not create " + table + " on " + db, e);
    }
  }

  public static Database database(TestDatabase db) {
    return switch (db) {
      case POSTGRESQL -> Database.POSTGRESQL;
      case MYSQL -> Database.MYSQL;
      case MARIADB -> Database.MARIADB;
      case SQLITE -> Database.SQLITE;
    };
  }

  /** A new pool on this fixture's database (the same file for SQLite). */
  public HikariDataSource pool(int size) {
    return pool(size, cfg -> {});
  }

  public HikariDataSource pool(int size, Consumer<HikariConfig> customize) {
    HikariConfig cfg = new HikariConfig();
    cfg.setMaximumPoolSize(size);
    cfg.setMinimumIdle(0);
    cfg.setConnectionTimeout(10_000);
    cfg.setPoolName(db + "-fixture-" + POOLS.incrementAndGet());
    if (sqliteFile != null) {
      cfg.setDataSource(TestDatabase.sqliteDataSource(sqliteFile));
    } else {
      cfg.setJdbcUrl(db.url());
    }
    customize.accept(cfg);
    HikariDataSource ds = new HikariDataSource(cfg);
    toClose.push(ds);
    return ds;
  }

  /** A builder on {@code ds} for this fixture's table, with a recording failure policy. */
  public LeaseManager.Builder builder(DataSource ds, String instance) {
    return LeaseManager.builder(ds)
        .table(table)
        .instance(instance)
        .failurePolicy((lease, worker) -> failurePolicyCalls.add(lease + " " + worker.getName()));
  }

  public LeaseManager manager(DataSource ds, String instance, LeaseTimings timings) {
    return track(builder(ds, instance).timings(timings).build());
  }

  public LeaseManager manager(String instance, LeaseTimings timings) {
    return manager(pool(4), instance, timings);
  }

  /**
   * Work that will not stop: returns once {@code until} holds, and goes on through every interrupt
   * ({@code onInterrupt} runs for each).
   */
  public static void ignoringInterrupts(BooleanSupplier until, OnInterrupt onInterrupt) {
    java.util.concurrent.CountDownLatch never = new java.util.concurrent.CountDownLatch(1);
    while (!until.getAsBoolean()) {
      try {
        never.await(20, java.util.concurrent.TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        try {
          onInterrupt.seen(); // and will not stop
        } catch (Exception failed) {
          throw new AssertionError(failed);
        }
      }
    }
  }

  /** What work that will not stop does with an interrupt. */
  @FunctionalInterface
  public interface OnInterrupt {
    void seen() throws Exception;
  }

  /**
   * Work that will not stop: counts {@code started} down, then goes on through every interrupt
   * until {@code until} holds; returns "ended".
   */
  public static LeaseWork<Object> stubbornWork(
      java.util.concurrent.CountDownLatch started, BooleanSupplier until) {
    return lease -> {
      started.countDown();
      ignoringInterrupts(until);
      return "ended";
    };
  }

  /** {@link #ignoringInterrupts(BooleanSupplier, OnInterrupt)} without counting the interrupts. */
  public static void ignoringInterrupts(BooleanSupplier until) {
    ignoringInterrupts(until, () -> {});
  }

  /** Reads a query's rows. */
  @FunctionalInterface
  public interface Rows<T> {
    T read(ResultSet rs) throws SQLException;
  }

  /**
   * What {@code read} makes of the rows of {@code sql} with {@code params}, queried through {@link
   * #admin}.
   */
  public <T> T query(String sql, Rows<T> read, Object... params) {
    try (Connection c = admin.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      T out;
      try (ResultSet rs = ps.executeQuery()) {
        out = read.read(rs);
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
      return out;
    } catch (SQLException e) {
      throw new AssertionError("could not read " + sql + " on " + db, e);
    }
  }

  /**
   * The live holder (instance) of each name whose row expires after {@code clock} (a number, or the
   * dialect's expression for the database clock).
   */
  public java.util.Map<String, String> liveHolders(String clock) {
    return query(
        "SELECT name, instance FROM " + table + " WHERE expires_at_ms > " + clock,
        rs -> {
          java.util.Map<String, String> out = new java.util.HashMap<>();
          while (rs.next()) {
            out.put(rs.getString(1), rs.getString(2));
          }
          return out;
        });
  }

  /** A listener that runs {@code action} when a lease is renewed, and does nothing else. */
  public static LeaseListener onRenewed(Consumer<Lease> action) {
    return new LeaseListener() {
      @Override
      public void renewed(Lease lease) {
        action.accept(lease);
      }
    };
  }

  /** A listener that runs {@code action} when a lease is lost, and does nothing else. */
  public static LeaseListener onLost(Consumer<Lease> action) {
    return new LeaseListener() {
      @Override
      public void lost(Lease lease, LossReason reason) {
        action.accept(lease);
      }
    };
  }

  /** What a check observed, run as shipped ({@code fault} null) or weakened by {@code fault}. */
  @FunctionalInterface
  public interface Check<W extends Weakening, T> {
    T run(Fixture f, W fault) throws Exception;
  }

  /**
   * A test and its negative control on one fresh fixture of {@code db}: {@code check} as shipped
   * observes {@code shipped} ({@code what} says what that means); weakened by {@code fault} it
   * observes {@code weakened} ({@code control} says why).
   */
  public static <W extends Weakening, T> void assertControlled(
      TestDatabase db,
      Check<W, T> check,
      T shipped,
      String what,
      W fault,
      T weakened,
      String control)
      throws Exception {
    try (Fixture f = new Fixture(db)) {
      org.junit.jupiter.api.Assertions.assertEquals(shipped, check.run(f, null), what);
      org.junit.jupiter.api.Assertions.assertEquals(
          weakened, check.run(f, fault), "negative control: " + control);
    }
  }

  /** {@code b} weakened by {@code fault} (none when null), built and tracked. */
  public LeaseManager build(LeaseManager.Builder b, Weakening fault) {
    return track(Weakening.apply(fault, b).build());
  }

  public <T extends AutoCloseable> T track(T closeable) {
    toClose.push(closeable);
    return closeable;
  }

  public static LeaseTimings timings(
      long leaseMs, long renewMs, long localDeadlineMs, long attemptMs, long graceMs) {
    return LeaseTimings.builder()
        .leaseDuration(Duration.ofMillis(leaseMs))
        .renewInterval(Duration.ofMillis(renewMs))
        .localDeadline(Duration.ofMillis(localDeadlineMs))
        .attemptTimeout(Duration.ofMillis(attemptMs))
        .gracePeriod(Duration.ofMillis(graceMs))
        .build();
  }

  /**
   * Runs {@code sql} with {@code params} on the admin pool and commits it: the test's own change to
   * the lease table, as another process or a failover would make it. Returns the update count.
   */
  public int update(String sql, Object... params) {
    try (Connection c = admin.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      int n = ps.executeUpdate();
      if (!c.getAutoCommit()) {
        c.commit();
      }
      return n;
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  /** The lease row of {@code name} as the database has it now. */
  public Row row(String name) {
    return query(
        "SELECT holder, instance, term, expires_at_ms, revision FROM " + table + " WHERE name = ?",
        rs ->
            rs.next()
                ? new Row(
                    rs.getString(1), rs.getString(2), rs.getLong(3), rs.getLong(4), rs.getLong(5))
                : null,
        name);
  }

  public record Row(String holder, String instance, long term, long expiresAtMs, long revision) {}

  /** Waits until {@code condition} holds, failing after {@code timeout}; polls every few ms. */
  public static void await(String what, Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError(
            "timed out after " + timeout.toMillis() + " ms waiting for " + what);
      }
      Thread.onSpinWait();
      try {
        Thread.sleep(5); // polling interval of a bounded wait, not synchronisation
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted waiting for " + what, e);
      }
    }
  }

  @Override
  public void close() {
    while (!toClose.isEmpty()) {
      AutoCloseable c = toClose.pop();
      if (c == admin) {
        TestDatabase.dropQuietly(admin, table);
      }
      try {
        c.close();
      } catch (Exception e) {
        // best effort
      }
    }
  }
}
