package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.MonotonicClock;
import java.net.InetAddress;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Claims, renews, verifies and releases leases in one lease table.
 *
 * <pre>{@code
 * LeaseManager leases = LeaseManager.builder(dataSource)
 *     .instance("billing-1")
 *     .createTableIfMissing()
 *     .build();
 * boolean ran = leases.runIfFree("nightly-billing", lease -> {
 *   billing.run();            // interrupted if the lease is lost
 *   return null;
 * });
 * }</pre>
 *
 * <p>Every statement reads the time from the database server's clock, so the clocks of the
 * processes never decide who holds a lease. A manager is thread-safe; close it to stop its keeper
 * threads (leases it holds are released first).
 */
public final class LeaseManager implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaseManager.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  static {
    // the other packages and modules of this project reach the package-private side through it
    LeaseInternals.register(new InternalAccess());
  }

  private final DataSource dataSource;
  private final Dialect dialect;
  private final String table;
  private final String instance;
  private final LeaseTimings timings;
  private final List<LeaseListener> listeners;
  private final FailurePolicy failurePolicy;
  private final MonotonicClock clock;
  private final ScheduledExecutorService scheduler;
  private final Executor attemptExecutor;
  // close() stops only what the manager made: a scheduler or executor given to the builder is the
  // caller's (and the attempt executor may be any Executor, not an ExecutorService)
  private final boolean ownsScheduler;
  private final boolean ownsAttemptExecutor;
  private final ThreadFactory workThreads;
  private final Set<Lease> held = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  private LeaseManager(Builder b, Dialect dialect) {
    this.dataSource = b.dataSource;
    this.dialect = dialect;
    this.table = b.table;
    this.instance = b.instance;
    this.timings = b.timings;
    this.listeners = List.copyOf(b.listeners);
    this.failurePolicy = b.failurePolicy;
    this.clock = b.clock;
    this.ownsScheduler = b.scheduler == null;
    this.ownsAttemptExecutor = b.attemptExecutor == null;
    this.scheduler = b.scheduler != null ? b.scheduler : defaultScheduler();
    this.attemptExecutor =
        b.attemptExecutor != null
            ? b.attemptExecutor
            : Executors.newCachedThreadPool(daemon("lease-renewal-"));
    this.workThreads = daemon("lease-work-");
  }

  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * The statements that create the lease table {@code table} on {@code database}, idempotent
   * ({@code CREATE TABLE IF NOT EXISTS}), for migration tools such as Flyway or Liquibase.
   */
  public static List<String> ddl(Database database, String table) {
    return database.ddl(table);
  }

  /** The DDL of this manager's table on its database. */
  public List<String> ddl() {
    return dialect.ddl();
  }

  /** The detected database: "PostgreSQL", "MySQL", "MariaDB" or "SQLite". */
  public String databaseProduct() {
    return dialect.product();
  }

  public String table() {
    return table;
  }

  public String instance() {
    return instance;
  }

  public LeaseTimings timings() {
    return timings;
  }

  /** The database server's clock now, UTC epoch milliseconds. */
  public long databaseTimeMillis() {
    return execute("read the database clock", dialect::now);
  }

  /**
   * Claims {@code name} once, without waiting: succeeds when nobody holds it or its holder's lease
   * expired by the database clock.
   *
   * @return the lease, or empty when another holder has it
   * @throws IllegalArgumentException if the name is empty or too long for the table
   * @throws LeaseException if the database could not be asked
   */
  public Optional<Lease> tryClaim(String name) {
    LeaseNames.validate(name);
    String holder = newHolder();
    execute(
        "create the lease row",
        c -> {
          dialect.createRow(c, name);
          return null;
        });
    // the local deadline counts from before the claim is sent: the database's expiry can only be
    // later
    long start = clock.nanoTime();
    Dialect.Claimed claimed =
        execute(
            "claim lease " + name,
            c -> dialect.claim(c, name, holder, instance, timings.leaseDuration().toMillis()));
    if (claimed == null) {
      log.debug("lease {} is held by another holder", name);
      return Optional.empty();
    }
    Lease lease = new Lease(this, name, holder, instance, claimed.term(), start);
    held.add(lease);
    log.info("claimed lease {} term {} instance {}", name, lease.term(), instance);
    safely(l -> l.claimed(lease));
    return Optional.of(lease);
  }

  /**
   * A lease object for {@code name} that this process does not hold: never held, never claimed, its
   * verify finds no row ({@link LeaseInternals#notHeld}).
   */
  Lease notHeld(String name) {
    LeaseNames.validate(name);
    Lease lease = new Lease(this, name, newHolder(), instance, 0, clock.nanoTime());
    lease.markNotHeld();
    return lease;
  }

  /**
   * Runs {@code work} under {@code lease}: keeps the lease renewed, runs the work on its own thread
   * with the lease bound to it ({@link LeaseContext}), interrupts that thread if the lease is lost,
   * and after the grace period runs the failure policy if the work still has not stopped. The lease
   * stays held afterwards; release it yourself.
   *
   * @return what the work returned
   * @throws LeaseWorkException if the work threw (its exception is the cause)
   * @throws LeaseLostException if the lease was lost before the work ended
   * @throws InterruptedException if the calling thread was interrupted (the work is interrupted
   *     too)
   */
  public <T> T runUnder(Lease lease, LeaseWork<T> work)
      throws LeaseWorkException, InterruptedException {
    Objects.requireNonNull(work, "work");
    if (lease.manager() != this) {
      throw new IllegalArgumentException(lease + " belongs to another LeaseManager");
    }
    if (!lease.isHeld()) {
      throw new LeaseLostException(lease, lease + " is not held", null);
    }
    lease.hold();
    AtomicReference<T> result = new AtomicReference<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread worker =
        workThreads.newThread(
            () -> {
              try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
                result.set(work.run(lease));
              } catch (Throwable t) {
                failure.set(t);
              }
            });
    worker.setName("lease-work-" + lease.name());
    worker.start();
    // registered after start: interrupting a thread that has not started does nothing, and a loss
    // that came first is reported to a late registration at once
    Lease.Registration onLoss =
        lease.onLoss(
            l -> {
              worker.interrupt();
              long graceNanos = timings.gracePeriod().toNanos();
              scheduler.schedule(
                  () -> {
                    if (worker.isAlive()) {
                      failurePolicy.workDidNotStop(l, worker);
                    }
                  },
                  graceNanos,
                  TimeUnit.NANOSECONDS);
            });
    try {
      worker.join();
    } catch (InterruptedException e) {
      worker.interrupt();
      worker.join(timings.gracePeriod().toMillis() + 1);
      if (worker.isAlive()) {
        // the caller gives up on the work (and usually releases the lease next): work that will
        // not stop is as dangerous as after a loss
        failurePolicy.workDidNotStop(lease, worker);
      }
      throw e;
    } finally {
      onLoss.close();
    }
    Throwable t = failure.get();
    if (lease.isLost()) {
      throw new LeaseLostException(
          lease,
          lease
              + " was lost ("
              + lease.lossReason().map(Enum::name).orElse("?")
              + ") while its work ran",
          t);
    }
    if (t != null) {
      throw new LeaseWorkException("work under " + lease + " failed: " + t, t);
    }
    return result.get();
  }

  /**
   * The one-call runner: claims {@code name} without waiting, keeps it renewed while {@code work}
   * runs under it ({@link #runUnder}), and releases it afterwards.
   *
   * @return true if the work ran; false if another holder had the lease (the work did not run)
   */
  public boolean runIfFree(String name, LeaseWork<?> work)
      throws LeaseWorkException, InterruptedException {
    Optional<Lease> claimed = tryClaim(name);
    if (claimed.isEmpty()) {
      return false;
    }
    Lease lease = claimed.get();
    try {
      runUnder(lease, work);
      return true;
    } finally {
      releaseQuietly(lease);
    }
  }

  /** Stops the keeper threads (if this manager made them) after releasing the leases it holds. */
  @Override
  public void close() {
    closed = true;
    new ArrayList<>(held).forEach(this::releaseQuietly);
    if (ownsScheduler) {
      scheduler.shutdownNow();
    }
    if (ownsAttemptExecutor) {
      ((ExecutorService) attemptExecutor).shutdownNow();
    }
  }

  private void releaseQuietly(Lease lease) {
    try {
      lease.release();
    } catch (LeaseException e) {
      log.warn("could not release {}; it expires by itself: {}", lease, e.getMessage());
    }
  }

  @Override
  public String toString() {
    return "LeaseManager["
        + dialect.product()
        + ", table "
        + table
        + ", instance "
        + instance
        + "]";
  }

  // ---- package-private: what leases, keepers and the scheduler use ------------------------------

  Dialect dialect() {
    return dialect;
  }

  MonotonicClock clock() {
    return clock;
  }

  ScheduledExecutorService scheduler() {
    return scheduler;
  }

  Executor attemptExecutor() {
    return attemptExecutor;
  }

  /** Leases stop being tracked for {@link #close()} once they are released or lost. */
  void forget(Lease lease) {
    held.remove(lease);
  }

  /** Calls every listener, logging and ignoring what they throw. */
  void safely(Consumer<LeaseListener> event) {
    for (LeaseListener l : listeners) {
      try {
        event.accept(l);
      } catch (RuntimeException e) {
        log.warn("lease listener {} failed", l, e);
      }
    }
  }

  /** Calls each listener with {@code event}, for lease-jdbc's transaction events. */
  void notifyListeners(Consumer<LeaseListener> event) {
    safely(event);
  }

  /**
   * The statements lease-jdbc runs once on a connection before STRICT verifies, bounding how long a
   * paused holder's open transaction can delay a takeover (MySQL/MariaDB lock wait and idle
   * timeouts); empty on databases whose verify statement carries the bound (PostgreSQL) or that
   * have no server (SQLite).
   */
  List<String> strictSessionStatements(
      java.time.Duration idleInTransaction, java.time.Duration lockWait) {
    return dialect.strictSessionBounds(idleInTransaction.toMillis(), lockWait.toMillis());
  }

  boolean renewInDatabase(Lease lease) {
    return execute(
        "renew lease " + lease.name(),
        c ->
            dialect.renew(
                c, lease.name(), lease.holder(), lease.term(), timings.leaseDuration().toMillis()));
  }

  boolean releaseInDatabase(Lease lease) {
    return execute(
        "release lease " + lease.name(),
        c -> dialect.release(c, lease.name(), lease.holder(), lease.term()));
  }

  boolean verifyInDatabase(Lease lease) {
    return execute(
        "verify lease " + lease.name(),
        c -> {
          try (PreparedStatement ps = c.prepareStatement(dialect.verifySql(false))) {
            dialect.bindVerify(ps, 1, lease.name(), lease.holder(), lease.term(), false, 0);
            try (ResultSet rs = ps.executeQuery()) {
              return rs.next();
            }
          }
        });
  }

  /**
   * True once {@link #close()} began: a scheduler on this manager stops and cuts its rounds short.
   */
  boolean isClosed() {
    return closed;
  }

  /**
   * A new holder token, for claims made outside {@link #tryClaim} (the scheduler's slot claims).
   */
  String mintHolder() {
    return newHolder();
  }

  /**
   * Takes over a lease claimed by a statement of the scheduler (a slot claim): tracked for {@link
   * #close()}, logged and announced like a claim of {@link #tryClaim}.
   */
  Lease adoptClaim(String name, String holder, long term, long claimStartNanos) {
    Lease lease = new Lease(this, name, holder, instance, term, claimStartNanos);
    held.add(lease);
    log.info("claimed lease {} term {} instance {}", name, term, instance);
    safely(l -> l.claimed(lease));
    return lease;
  }

  /**
   * Runs lease SQL on a connection of its own, bounded by the attempt timeout: on the network
   * ({@link Connection#setNetworkTimeout}) and in the database (lock and statement timeouts).
   */
  <T> T execute(String what, Dialect.SqlCall<T> call) {
    long timeoutMs = timings.attemptTimeout().toMillis();
    try (Connection c = dataSource.getConnection()) {
      // The connection is the application's (pooled): its network timeout is put back afterwards,
      // since not every pool resets it (PooledSessionTest). Set on the calling thread: MySQL
      // Connector/J applies it on the given executor, so an asynchronous one would let the
      // statement start unbounded and the restore overtake the set.
      int savedNetworkTimeout = -1;
      try {
        savedNetworkTimeout = c.getNetworkTimeout();
        c.setNetworkTimeout(Runnable::run, (int) timeoutMs);
      } catch (SQLFeatureNotSupportedException | AbstractMethodError e) {
        // SQLite has no network; the busy timeout bounds it instead
      }
      try {
        return dialect.inLeaseSession(c, timeoutMs, call);
      } finally {
        if (savedNetworkTimeout >= 0) {
          restoreNetworkTimeout(c, savedNetworkTimeout);
        }
      }
    } catch (SQLException e) {
      throw translate(what, e);
    }
  }

  /** Best effort: a connection the attempt broke is discarded by its pool anyway. */
  private static void restoreNetworkTimeout(Connection c, int timeoutMs) {
    try {
      if (!c.isClosed()) {
        c.setNetworkTimeout(Runnable::run, timeoutMs);
      }
    } catch (SQLException e) {
      log.debug("could not restore the network timeout of a lease connection", e);
    }
  }

  private LeaseException translate(String what, SQLException e) {
    if (dialect.isMissingTable(e)) {
      return new LeaseException(missingTable(dialect), e);
    }
    return new LeaseException(
        "could not "
            + what
            + " in lease table "
            + table
            + " on "
            + dialect.product()
            + ": "
            + e.getMessage(),
        e);
  }

  private static String missingTable(Dialect dialect) {
    String table = dialect.table();
    return "lease table "
        + table
        + " does not exist in this "
        + dialect.product()
        + " database; create it with LeaseManager.builder(...).createTableIfMissing(), or apply"
        + " LeaseManager.ddl(Database."
        + dialect.product().toUpperCase(Locale.ROOT)
        + ", \""
        + table
        + "\") in your migrations (the DDL is also in the README)";
  }

  private static String newHolder() {
    byte[] b = new byte[16];
    RANDOM.nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  private static ScheduledExecutorService defaultScheduler() {
    ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(2, daemon("lease-keeper-"));
    s.setRemoveOnCancelPolicy(true);
    return s;
  }

  private static ThreadFactory daemon(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  private static String defaultInstance() {
    String host = System.getenv("HOSTNAME");
    if (host == null || host.isBlank()) {
      try {
        host = InetAddress.getLocalHost().getHostName();
      } catch (Exception e) {
        host = "unknown-host";
      }
    }
    String id = host + "/" + ProcessHandle.current().pid();
    return id.length() <= Dialect.INSTANCE_WIDTH ? id : id.substring(0, Dialect.INSTANCE_WIDTH);
  }

  /** Configures a {@link LeaseManager}; {@link #build()} validates everything before any SQL. */
  public static final class Builder {
    private final DataSource dataSource;
    private String table = "leases";
    private String instance;
    private LeaseTimings timings = LeaseTimings.DEFAULTS;
    private final List<LeaseListener> listeners = new ArrayList<>();
    private FailurePolicy failurePolicy = FailurePolicy.haltProcess();
    private MonotonicClock clock = MonotonicClock.SYSTEM;
    private ScheduledExecutorService scheduler;
    private Executor attemptExecutor;
    private String clockFunction;
    private boolean createTable;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /** The lease table, a plain identifier optionally qualified by a schema; default "leases". */
    public Builder table(String table) {
      this.table = table;
      return this;
    }

    /** Names this process in the lease row, for humans; default host/pid. */
    public Builder instance(String instance) {
      this.instance = instance;
      return this;
    }

    public Builder timings(LeaseTimings timings) {
      this.timings = Objects.requireNonNull(timings, "timings");
      return this;
    }

    /** Adds a listener of lease events. */
    public Builder listener(LeaseListener listener) {
      listeners.add(Objects.requireNonNull(listener, "listener"));
      return this;
    }

    /**
     * What to do when work under a lost lease does not stop; default {@link
     * FailurePolicy#haltProcess()}.
     */
    public Builder failurePolicy(FailurePolicy policy) {
      this.failurePolicy = Objects.requireNonNull(policy, "failurePolicy");
      return this;
    }

    /** Test hook ({@link LeaseInternals#clock}): the process's monotonic clock. */
    Builder clock(MonotonicClock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** Test hook ({@link LeaseInternals#scheduler}): the timers of the keeper and the grace. */
    Builder scheduler(ScheduledExecutorService scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /** Test hook ({@link LeaseInternals#attemptExecutor}): where lease statements run. */
    Builder attemptExecutor(Executor executor) {
      this.attemptExecutor = Objects.requireNonNull(executor, "attemptExecutor");
      return this;
    }

    /**
     * Test hook ({@link LeaseInternals#clockFunctionForTesting}): the database clock's function.
     */
    Builder clockFunctionForTesting(String name) {
      this.clockFunction = LeaseNames.function(name);
      return this;
    }

    /** Creates the lease table at build time if it does not exist. */
    public Builder createTableIfMissing() {
      this.createTable = true;
      return this;
    }

    /**
     * Validates the configuration, detects the database and checks the lease table.
     *
     * @throws IllegalArgumentException for a bad table name or instance
     * @throws LeaseException when the database is unreachable or unsupported, or the table is
     *     missing
     */
    public LeaseManager build() {
      LeaseNames.table(table);
      instance = LeaseNames.instance(instance != null ? instance : defaultInstance());
      Dialect dialect;
      try (Connection c = dataSource.getConnection()) {
        dialect = Dialect.detect(c, table, clockFunction);
        if (createTable) {
          try (Statement s = c.createStatement()) {
            for (String ddl : dialect.ddl()) {
              s.execute(ddl);
            }
          } catch (SQLException e) {
            // reached the database, but could not create the table: not a connection problem
            throw new LeaseException(
                "could not create lease table "
                    + table
                    + " on "
                    + dialect.product()
                    + " ("
                    + e.getMessage()
                    + "); check that the user may create"
                    + " tables and that the name is not a reserved word, or create it in your"
                    + " migrations with LeaseManager.ddl(Database."
                    + dialect.product().toUpperCase(Locale.ROOT)
                    + ", \""
                    + table
                    + "\")",
                e);
          }
          if (!c.getAutoCommit()) {
            c.commit();
          }
        }
        try {
          dialect.checkTable(c);
        } catch (SQLException e) {
          if (dialect.isMissingTable(e)) {
            throw new LeaseException(missingTable(dialect), e);
          }
          // the table exists but is not a lease table of this shape: not a connection problem
          throw new LeaseException(
              "lease table "
                  + table
                  + " cannot be used as a lease table on "
                  + dialect.product()
                  + " ("
                  + e.getMessage()
                  + "); it needs the columns of"
                  + " LeaseManager.ddl(Database."
                  + dialect.product().toUpperCase(Locale.ROOT)
                  + ", \""
                  + table
                  + "\"): migrate it, or choose another table with .table(...)",
              e);
        } finally {
          if (!c.getAutoCommit()) {
            c.rollback();
          }
        }
      } catch (SQLException e) {
        throw new LeaseException(
            "cannot reach the lease database ("
                + e.getMessage()
                + "); check that it is running and that the DataSource's URL, user and password are"
                + " right",
            e);
      }
      return new LeaseManager(this, dialect);
    }
  }
}
