package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.LifecycleRules;
import dev.lease.core.internal.MonotonicClock;
import dev.lease.core.internal.SqlRules;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
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
 *   billing.run();            // interrupted if the lease is lost or released
 *   return null;
 * });
 * }</pre>
 *
 * <p>Every statement reads the time from the database server's clock, so the clocks of the
 * processes never decide who holds a lease. Every lease statement (an "attempt": borrowing the
 * connection, the statements, the commit) is bounded as a whole by the attempt timeout. A manager
 * is thread-safe.
 *
 * <p>{@link #close()} (for example from a shutdown hook) refuses new claims, then ends every lease
 * it holds in the order of {@link Lease}: interrupts the work running under them, waits up to the
 * grace period for it to end, releases the rows, and stops its threads. Shutdown is not a loss: it
 * never runs the failure policy, so it never halts the JVM.
 */
public final class LeaseManager implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaseManager.class);

  static {
    // the other packages and modules of this project reach the package-private side through it
    LeaseInternals.register(new InternalAccess());
  }

  private final Dialect dialect;
  private final String table;
  private final String instance;
  private final LeaseTimings timings;
  private final List<LeaseListener> listeners;
  private final MonotonicClock clock;

  private final ManagerThreads threads;
  private final LifecycleRules rules;
  private final Set<Lease> held = ConcurrentHashMap.newKeySet();
  private final Attempts attempts;
  private final Releases releases;
  private final Claims claims;
  private final WorkRunner workRunner;
  private final BatchRenewal renewals;
  private final AtomicBoolean closing = new AtomicBoolean();
  private volatile boolean closed;

  private LeaseManager(Builder b, Dialect dialect) {
    this.dialect = dialect;
    this.table = b.table;
    this.instance = b.instance;
    this.timings = b.timings;
    this.listeners = List.copyOf(b.listeners);
    this.clock = b.clock;
    this.rules = b.rules;
    this.threads = new ManagerThreads(b.scheduler, b.attemptExecutor, b.lossExecutor);
    this.attempts =
        new Attempts(
            b.dataSource,
            dialect,
            table,
            timings,
            rules,
            b.attemptClock,
            threads.attemptExecutor,
            threads.ownsAttemptExecutor);
    this.releases =
        new Releases(
            this,
            attempts,
            dialect,
            instance,
            timings,
            rules,
            b.failurePolicy,
            threads.scheduler,
            threads.lossExecutor);
    this.claims = new Claims(this, attempts, releases, dialect, instance, timings, clock);
    this.workRunner =
        new WorkRunner(this, releases, timings, rules, threads.workThreads, b.afterWork);
    this.renewals = new BatchRenewal(this);
  }

  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * The statements that create the lease table {@code table} on {@code database}, idempotent
   * ({@code CREATE TABLE IF NOT EXISTS}), for migration tools such as Flyway or Liquibase.
   */
  public static List<String> ddl(Database database, String table) {
    String t = LeaseNames.table(table);
    Dialect dialect =
        switch (database) {
          case POSTGRESQL -> Dialect.postgresql(t);
          case MYSQL -> Dialect.mysql(t);
          case MARIADB -> Dialect.mariadb(t);
          case SQLITE -> Dialect.sqlite(t);
        };
    return dialect.ddl();
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
    return attempts.execute("read the database clock", dialect::now);
  }

  /**
   * Claims {@code name} once, without waiting: succeeds when nobody holds it or its holder's lease
   * expired by the database clock.
   *
   * @return the lease, or empty when another holder has it
   * @throws IllegalArgumentException if the name is not a valid lease name ({@link LeaseNames})
   * @throws IllegalStateException if this manager is closed, or was closed while the claim was in
   *     flight (the claim is then released, never handed out)
   * @throws LeaseException if the database could not be asked within the attempt timeout
   */
  public Optional<Lease> tryClaim(String name) {
    return claims.tryClaim(name);
  }

  /**
   * Adopts {@code name} if its holder transferred it to this manager's instance ({@link
   * Lease#transferTo}) and the transfer has not expired: one statement that makes this manager the
   * holder at the term the transfer wrote. {@link #tryClaim} tries it whenever a claim finds the
   * lease held, so a successor that polls with {@code tryClaim} adopts without calling this.
   *
   * @return the lease, or empty when nothing was transferred to this instance
   * @throws IllegalArgumentException if the name is not a valid lease name ({@link LeaseNames})
   * @throws IllegalStateException if this manager is closed
   * @throws LeaseException if the database could not be asked within the attempt timeout
   */
  public Optional<Lease> tryAdopt(String name) {
    return claims.tryAdopt(name);
  }

  /**
   * The leases this manager holds now (claimed, neither released nor lost, within their local
   * deadline): a snapshot.
   */
  public Set<Lease> held() {
    List<Lease> now = new ArrayList<>();
    for (Lease l : held) {
      if (l.isHeld()) {
        now.add(l);
      }
    }
    return Set.copyOf(now);
  }

  /**
   * What the database says about {@code name} now: the instance that claimed it last, its term, and
   * its expiry and the database clock, read in one statement; for operators and health checks.
   *
   * @return empty if the name has no row (it was never claimed here)
   * @throws IllegalArgumentException if the name is not a valid lease name
   * @throws LeaseException if the database could not be asked within the attempt timeout
   */
  public Optional<LeaseInfo> describe(String name) {
    LeaseNames.validate(name);
    Dialect.RowState row =
        attempts.execute("describe lease " + name, c -> dialect.describe(c, name));
    if (row == null) {
      return Optional.empty();
    }
    return Optional.of(
        new LeaseInfo(
            name,
            row.instance(),
            row.term(),
            Instant.ofEpochMilli(row.expiresAtMs()),
            Instant.ofEpochMilli(row.databaseNowMs())));
  }

  /**
   * Whether this manager's database can hold leases now: it answers within the attempt timeout, the
   * lease table is there with its columns, and this user may write it. Never throws; for health
   * checks and readiness probes.
   */
  public Availability available() {
    if (closed) {
      return Availability.no("this LeaseManager is closed; build a new one");
    }
    try {
      attempts.execute(
          "check the lease table",
          c -> {
            dialect.checkTable(c);
            dialect.checkWritable(c);
            return dialect.now(c);
          });
      return Availability.yes();
    } catch (LeaseException e) {
      return Availability.no(e.getMessage());
    } catch (RuntimeException e) {
      return Availability.no("the lease database could not be checked: " + e);
    }
  }

  /**
   * A lease object for {@code name} that this process does not hold: never held, never claimed, its
   * verify finds no row ({@link LeaseInternals#notHeld}).
   */
  Lease notHeld(String name) {
    LeaseNames.validate(name);
    Lease lease = new Lease(this, name, Claims.newHolder(), instance, 0, true, clock.nanoTime());
    lease.markNotHeld();
    return lease;
  }

  /**
   * Runs {@code work} under {@code lease}: keeps the lease renewed, runs the work on its own thread
   * with the lease bound to it ({@link LeaseContext}), and returns what it returned. The work's
   * thread is interrupted when the lease ends under it:
   *
   * <ul>
   *   <li>lost: after the grace period the failure policy runs if the work still has not stopped
   *       (once per lease); {@link LeaseLostException};
   *   <li>released ({@link Lease#release()}, {@link #close()}, a scheduler closing): the release
   *       waits up to the grace period for the work to end before it gives the row back; {@link
   *       LeaseReleasedException}, and no failure policy (shutdown is not a loss).
   * </ul>
   *
   * <p>Work that returned before its lease ended has run to its end: its value is returned even if
   * the lease is lost a moment later. The lease stays held afterwards; release it yourself.
   *
   * @return what the work returned
   * @throws LeaseWorkException if the work threw (its exception is the cause)
   * @throws LeaseLostException if the lease was lost while the work ran (its exception, if any, is
   *     the cause)
   * @throws LeaseReleasedException if the lease was released while the work ran
   * @throws IllegalStateException if this manager is closed or the lease was already released
   * @throws InterruptedException if the calling thread was interrupted: the work is interrupted too
   *     and given the grace period to end; it stays bound to the lease, which stays held (a release
   *     stops it first)
   */
  public <T> T runUnder(Lease lease, LeaseWork<T> work)
      throws LeaseWorkException, InterruptedException {
    return workRunner.run(lease, work);
  }

  /**
   * The one-call runner: claims {@code name} without waiting, keeps it renewed while {@code work}
   * runs under it ({@link #runUnder}), and releases it afterwards.
   *
   * @return true if the work ran to its end; false if another holder had the lease (the work did
   *     not run)
   * @throws LeaseReleasedException if the lease was released while the work ran (for example by
   *     {@link #close()} from a shutdown hook): the work was stopped first
   * @throws LeaseLostException if the lease was lost while the work ran
   * @throws LeaseWorkException if the work threw
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

  /**
   * Shuts the manager down, in this order: refuses new claims ({@link #tryClaim}, {@link
   * Lease#hold()} and {@link #runUnder} throw {@link IllegalStateException}; a claim in flight is
   * released when it completes); interrupts the work running under every lease it holds and waits
   * up to the grace period for it to end; releases those leases (so other processes can claim them
   * at once); stops the threads it made. Work that did not stop within the grace period is left
   * running and logged: shutdown is not a loss, so the failure policy never runs here and the JVM
   * is never halted by it. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    if (!closing.compareAndSet(false, true)) {
      return;
    }
    removeShutdownHook();
    releases.release(new ArrayList<>(held), false);
    threads.shutdown();
  }

  /**
   * Installs {@link #close()} as a JVM shutdown hook, so that leases this manager holds are handed
   * back (work stopped first, then the rows released) when the JVM exits without a call to close,
   * for example when {@code main} returns or on SIGTERM; otherwise they stay live in the database
   * until they expire. Idempotent; the hook is the same thread on every call, and a close() before
   * the JVM exits makes it do nothing. Close a {@code LeaseGroup} or scheduler on this manager
   * before it: install their hooks, or close them in a hook of your own, then this manager.
   *
   * @return the hook's thread
   * @throws IllegalStateException if this manager is closed
   */
  public Thread closeOnShutdown() {
    ensureOpen("install a shutdown hook");
    synchronized (shutdownHookLock) {
      if (shutdownHook == null) {
        Thread hook = new Thread(this::close, "lease-manager-shutdown-" + instance);
        Runtime.getRuntime().addShutdownHook(hook);
        shutdownHook = hook;
      }
      return shutdownHook;
    }
  }

  private final Object shutdownHookLock = new Object();
  private Thread shutdownHook; // guarded by shutdownHookLock

  /** A close() before the JVM exits takes its hook back (nothing keeps the manager reachable). */
  private void removeShutdownHook() {
    synchronized (shutdownHookLock) {
      if (shutdownHook != null && shutdownHook != Thread.currentThread()) {
        try {
          Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException e) {
          // the JVM is shutting down: the hook runs (or ran) close(), which does nothing more
        }
      }
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

  // ---- package-private: what leases, keepers and the internal bridge use ----------------------

  Dialect dialect() {
    return dialect;
  }

  MonotonicClock clock() {
    return clock;
  }

  ScheduledExecutorService scheduler() {
    return threads.scheduler;
  }

  Executor attemptExecutor() {
    return threads.attemptExecutor;
  }

  /** Where this manager's lease SQL runs, bounded by the attempt timeout. */
  Attempts attempts() {
    return attempts;
  }

  /** The release, transfer and loss of this manager's leases. */
  Releases releases() {
    return releases;
  }

  /** How this manager comes to hold leases: claims, adoptions, take-overs. */
  Claims claims() {
    return claims;
  }

  /** Runs work under this manager's leases, or binds the caller's thread to one. */
  WorkRunner workRunner() {
    return workRunner;
  }

  /** The batched renewal of the leases this manager keeps. */
  BatchRenewal renewals() {
    return renewals;
  }

  /** The lifecycle rules: {@link LifecycleRules#PRODUCTION} unless a test weakened them. */
  LifecycleRules rules() {
    return rules;
  }

  /** Throws if this manager is closed: nothing may start on it any more. */
  void ensureOpen(String what) {
    if (closed && rules.checksClosed()) {
      throw new IllegalStateException(
          this + " is closed: cannot " + what + "; build a new LeaseManager");
    }
  }

  /** Leases stop being tracked for {@link #close()} once they are released or lost. */
  void forget(Lease lease) {
    held.remove(lease);
  }

  /**
   * Tracks a new claim for {@link #close()}. If close() began while the claim was in flight, its
   * release may have missed it: the claim is released here instead, never handed out with no keeper
   * to renew it.
   */
  Lease track(Lease lease) {
    held.add(lease);
    // held.add before reading closed, close() sets closed before reading held: one of the two
    // sees the other
    if (closed && rules.checksClosed()) {
      releaseQuietly(lease);
      throw new IllegalStateException(
          this
              + " was closed while the claim of "
              + lease.name()
              + " was in flight; the claim (term "
              + lease.term()
              + ") was released, not handed out");
    }
    return lease;
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
  List<String> strictSessionStatements(Duration idleInTransaction, Duration lockWait) {
    return dialect.strictSessionBounds(idleInTransaction.toMillis(), lockWait.toMillis());
  }

  boolean renewInDatabase(Lease lease) {
    return attempts.executeStep("renew lease " + lease.name(), renewCall(lease), null);
  }

  Dialect.StepCall<Boolean> renewCall(Lease lease) {
    long leaseMs = timings.leaseDuration().toMillis();
    return (c, timeoutMs) ->
        dialect.renewStep(c, lease.name(), lease.holder(), lease.term(), leaseMs, timeoutMs);
  }

  boolean verifyInDatabase(Lease lease) {
    return attempts.executeStep(
        "verify lease " + lease.name(),
        (c, timeoutMs) ->
            dialect.verifyStep(c, lease.name(), lease.holder(), lease.term(), timeoutMs),
        null);
  }

  /** True once {@link #close()} began. */
  boolean isClosed() {
    return closed;
  }

  /**
   * A new holder token, for claims made outside {@link #tryClaim} (the scheduler's slot claims).
   */
  String mintHolder() {
    return Claims.newHolder();
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
    private MonotonicClock attemptClock = MonotonicClock.SYSTEM;
    private ScheduledExecutorService scheduler;
    private Executor attemptExecutor;
    private Executor lossExecutor;
    private Consumer<Lease> afterWork;
    private SqlRules sqlRules = SqlRules.PRODUCTION;
    private LifecycleRules rules = LifecycleRules.PRODUCTION;
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

    /** Test hook ({@link LeaseInternals#attemptClock}): what attempt timeouts are measured by. */
    Builder attemptClock(MonotonicClock clock) {
      this.attemptClock = Objects.requireNonNull(clock, "attemptClock");
      return this;
    }

    /** Test hook ({@link LeaseInternals#scheduler}): the timers of the keeper and the grace. */
    Builder scheduler(ScheduledExecutorService scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /** Test hook ({@link LeaseInternals#lossExecutor}): where loss handling runs. */
    Builder lossExecutor(Executor executor) {
      this.lossExecutor = Objects.requireNonNull(executor, "lossExecutor");
      return this;
    }

    /** Test hook ({@link LeaseInternals#afterWorkForTesting}). */
    Builder afterWorkForTesting(Consumer<Lease> hook) {
      this.afterWork = Objects.requireNonNull(hook, "afterWork");
      return this;
    }

    /** Test hook ({@link LeaseInternals#sqlRulesForTesting}): deliberately weakened SQL. */
    Builder sqlRulesForTesting(SqlRules rules) {
      this.sqlRules = Objects.requireNonNull(rules, "rules");
      return this;
    }

    /** Test hook ({@link LeaseInternals#rulesForTesting}): deliberately weakened rules. */
    Builder rulesForTesting(LifecycleRules rules) {
      this.rules = Objects.requireNonNull(rules, "rules");
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
      instance = LeaseNames.instance(instance != null ? instance : LeaseNames.defaultInstance());
      Dialect dialect = LeaseTable.open(dataSource, table, clockFunction, sqlRules, createTable);
      return new LeaseManager(this, dialect);
    }
  }
}
