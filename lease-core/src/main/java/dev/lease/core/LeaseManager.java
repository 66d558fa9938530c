package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.CallerWork;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.MonotonicClock;
import dev.lease.core.internal.TestFault;
import java.net.InetAddress;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
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

  /**
   * What an attempt's timeout is measured by: {@link System#nanoTime()}, or a simulation's virtual
   * clock ({@link LeaseInternals#attemptClock}), where a statement takes no time and a real-time
   * stall of the simulating JVM (a loaded machine) must not time an attempt out. With a virtual
   * clock the borrow is not interrupted by the real-time {@link BorrowWatchdog} either.
   */
  private final MonotonicClock attemptClock;

  private final ScheduledExecutorService scheduler;
  private final Executor attemptExecutor;
  private final Executor lossExecutor;
  // close() stops only what the manager made: a scheduler or executor given to the builder is the
  // caller's (and the attempt executor may be any Executor, not an ExecutorService)
  private final boolean ownsScheduler;
  private final boolean ownsAttemptExecutor;
  private final boolean ownsLossExecutor;
  private final ThreadFactory workThreads;
  private final Set<TestFault> faults;
  private final Consumer<Lease> afterWork;
  private final Set<Lease> held = ConcurrentHashMap.newKeySet();
  private final BatchRenewal renewals;
  private final AtomicBoolean closing = new AtomicBoolean();
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
    this.attemptClock = b.attemptClock;
    this.faults = b.faults.isEmpty() ? Set.of() : EnumSet.copyOf(b.faults);
    this.afterWork = b.afterWork;
    this.ownsScheduler = b.scheduler == null;
    this.ownsAttemptExecutor = b.attemptExecutor == null;
    this.ownsLossExecutor = b.lossExecutor == null;
    this.scheduler = b.scheduler != null ? b.scheduler : defaultScheduler();
    this.attemptExecutor =
        b.attemptExecutor != null
            ? b.attemptExecutor
            : Executors.newCachedThreadPool(daemon("lease-attempt-"));
    // Loss handling has threads of its own: a slow LeaseListener.lost, onLoss callback or failure
    // policy must not hold a keeper thread, which would delay the deadline checks and renewals of
    // every other lease of this manager (ManagerLifecycleTest).
    this.lossExecutor =
        b.lossExecutor != null
            ? b.lossExecutor
            : Executors.newCachedThreadPool(daemon("lease-loss-"));
    this.workThreads = daemon("lease-work-");
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
   * @throws IllegalArgumentException if the name is not a valid lease name ({@link LeaseNames})
   * @throws IllegalStateException if this manager is closed, or was closed while the claim was in
   *     flight (the claim is then released, never handed out)
   * @throws LeaseException if the database could not be asked within the attempt timeout
   */
  public Optional<Lease> tryClaim(String name) {
    LeaseNames.validate(name);
    ensureOpen("claim lease " + name);
    String holder = newHolder();
    // the local deadline counts from before the claim is sent: the database's expiry can only be
    // later
    long start = clock.nanoTime();
    Dialect.ClaimResult claimed = claimStep(name, holder);
    if (claimed.term() == null && !Boolean.TRUE.equals(claimed.rowExists())) {
      // the row is missing (or the statement cannot tell, MySQL/MariaDB): one more statement, once
      // per name; it creates the row only if it is missing
      boolean created =
          executeStep(
              "create the lease row",
              (c, timeoutMs) -> dialect.createRowStep(c, name, timeoutMs),
              null);
      if (created || Boolean.FALSE.equals(claimed.rowExists())) {
        start = clock.nanoTime();
        claimed = claimStep(name, holder);
      }
    }
    if (claimed.term() == null && !Boolean.FALSE.equals(claimed.rowExists())) {
      Optional<Lease> adopted = tryAdopt(name); // a transfer to this instance: adopt it
      if (adopted.isPresent()) {
        return adopted;
      }
    }
    if (claimed.term() == null) {
      log.debug("lease {} is held by another holder", name);
      safely(l -> l.claimRefused(name));
      return Optional.empty();
    }
    Lease lease = track(new Lease(this, name, holder, instance, claimed.term(), start));
    log.info("claimed lease {} term {} instance {}", name, lease.term(), instance);
    safely(l -> l.claimed(lease));
    return Optional.of(lease);
  }

  /** One claim statement; a claim that completes after its caller gave up is released at once. */
  private Dialect.ClaimResult claimStep(String name, String holder) {
    long leaseMs = timings.leaseDuration().toMillis();
    return executeStep(
        "claim lease " + name,
        (c, timeoutMs) -> dialect.claimStep(c, name, holder, instance, leaseMs, timeoutMs),
        // the caller stopped waiting (attempt timeout) and the claim went through after all:
        // nobody holds this claim, so give the row back at once
        late -> {
          if (late != null && late.term() != null) {
            releaseOrphan(name, holder, late.term());
          }
        });
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
    LeaseNames.validate(name);
    ensureOpen("adopt lease " + name);
    String holder = newHolder();
    long start = clock.nanoTime();
    long leaseMs = timings.leaseDuration().toMillis();
    Long term =
        executeStep(
            "adopt lease " + name,
            (c, timeoutMs) -> dialect.adoptStep(c, name, instance, holder, leaseMs, timeoutMs),
            late -> {
              if (late != null) {
                releaseOrphan(name, holder, late);
              }
            });
    if (term == null) {
      return Optional.empty();
    }
    Lease lease = track(new Lease(this, name, holder, instance, term, start));
    log.info("adopted lease {} term {} instance {} (transferred to it)", name, term, instance);
    safely(l -> l.adopted(lease));
    return Optional.of(lease);
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
    Dialect.RowState row = execute("describe lease " + name, c -> dialect.describe(c, name));
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
      execute(
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
    Lease lease = new Lease(this, name, newHolder(), instance, 0, clock.nanoTime());
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
    Objects.requireNonNull(work, "work");
    if (lease.manager() != this) {
      throw new IllegalArgumentException(lease + " belongs to another LeaseManager");
    }
    ensureOpen("run work under " + lease);
    AtomicReference<T> result = new AtomicReference<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicReference<BoundWork> self = new AtomicReference<>();
    Thread worker =
        workThreads.newThread(
            () -> {
              try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
                result.set(work.run(lease));
              } catch (Throwable t) {
                failure.set(t);
              } finally {
                self.get().workEnded();
              }
            });
    worker.setName("lease-work-" + lease.name());
    BoundWork bound = new BoundWork(worker);
    self.set(bound);
    attach(lease, bound);
    try {
      lease.hold();
    } catch (RuntimeException e) {
      // close() came between the claim and here: the worker never starts, so nothing may wait for
      // it
      bound.workEnded();
      lease.detach(bound);
      throw e;
    }
    worker.start();
    try {
      bound.awaitSettled();
    } catch (InterruptedException e) {
      // the caller gives up on the work: stop it, but this is not a loss (the lease is still held
      // and renewed, so the work is still fenced by it) and runs no failure policy
      bound.requestStop();
      long graceNanos = timings.gracePeriod().toNanos();
      boolean stopped = awaitQuietly(bound, graceNanos);
      if (!stopped) {
        log.warn(
            "work thread {} under {} did not stop within the grace period of {} ms after its"
                + " caller was interrupted; it stays bound to the lease, which a release stops"
                + " first",
            worker.getName(),
            lease,
            timings.gracePeriod().toMillis());
        if (faults.contains(TestFault.POLICY_ON_RELEASE)) {
          runPolicy(lease, worker);
        }
      }
      throw e;
    } finally {
      if (bound.hasEnded()) {
        lease.detach(bound);
      }
    }
    if (afterWork != null) {
      afterWork.accept(lease);
    }
    Throwable t = failure.get();
    if (bound.wasStopped()) {
      if (lease.isLost()) {
        throw new LeaseLostException(
            lease,
            lease
                + " was lost ("
                + lease.lossReason().map(Enum::name).orElse("?")
                + ") while its work ran; the work was interrupted",
            t);
      }
      boolean stopped = bound.hasEnded();
      throw new LeaseReleasedException(
          lease,
          lease
              + " was released while its work ran; "
              + (stopped
                  ? "the work was interrupted and stopped before the release"
                  : "the work was interrupted and did not stop within the grace period of "
                      + timings.gracePeriod().toMillis()
                      + " ms; it still runs, no longer under the lease"),
          stopped,
          t);
    }
    if (faults.contains(TestFault.LOSS_AFTER_RETURN_IS_A_LOSS) && lease.isLost()) {
      throw new LeaseLostException(lease, lease + " was lost", t); // the bug: after the work ended
    }
    if (t != null) {
      throw new LeaseWorkException("work under " + lease + " failed: " + t, t);
    }
    return result.get();
  }

  /** Binds {@code bound} to {@code lease}, or says why it cannot be. */
  private static void attach(Lease lease, BoundWork bound) {
    if (!lease.isHeld() || !lease.attach(bound)) {
      if (lease.isReleased()) {
        throw new IllegalStateException(
            lease + " was released; claim the name again for a new lease");
      }
      throw new LeaseLostException(
          lease,
          lease + " is not held (" + lease.lossReason().map(Enum::name).orElse("released") + ")",
          null);
    }
  }

  /**
   * Binds the calling thread to {@code lease} as work under it, the way {@link #runUnder} binds the
   * thread it starts ({@link LeaseInternals#bindCurrentThread}): a release or {@link #close()}
   * interrupts it and waits up to the grace period for it to end before giving the row back; a loss
   * interrupts it at once, and the failure policy runs if it has not ended after the grace period.
   * The caller binds {@link LeaseContext} and keeps the lease renewed itself.
   */
  CallerWork bindCurrentThread(Lease lease) {
    if (lease.manager() != this) {
      throw new IllegalArgumentException(lease + " belongs to another LeaseManager");
    }
    ensureOpen("run work under " + lease);
    BoundWork bound = new BoundWork(Thread.currentThread());
    attach(lease, bound);
    return () -> {
      bound.workEnded();
      lease.detach(bound);
      return bound.wasStopped();
    };
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
    release(new ArrayList<>(held), false);
    if (ownsScheduler) {
      scheduler.shutdownNow();
    }
    // shutdown, not shutdownNow: the handling of a loss that came before close (its grace period
    // and failure policy) still runs, and a late release still goes out
    if (ownsAttemptExecutor) {
      ((ExecutorService) attemptExecutor).shutdown();
    }
    if (ownsLossExecutor) {
      ((ExecutorService) lossExecutor).shutdown();
    }
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
    return scheduler;
  }

  Executor attemptExecutor() {
    return attemptExecutor;
  }

  /** The batched renewal of the leases this manager keeps. */
  BatchRenewal renewals() {
    return renewals;
  }

  boolean has(TestFault fault) {
    return faults.contains(fault);
  }

  /** Throws if this manager is closed: nothing may start on it any more. */
  void ensureOpen(String what) {
    if (closed && !faults.contains(TestFault.NO_CLOSED_CHECK)) {
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
  private Lease track(Lease lease) {
    held.add(lease);
    // held.add before reading closed, close() sets closed before reading held: one of the two
    // sees the other
    if (closed && !faults.contains(TestFault.NO_CLOSED_CHECK)) {
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
    return executeStep("renew lease " + lease.name(), renewCall(lease), null);
  }

  Dialect.StepCall<Boolean> renewCall(Lease lease) {
    long leaseMs = timings.leaseDuration().toMillis();
    return (c, timeoutMs) ->
        dialect.renewStep(c, lease.name(), lease.holder(), lease.term(), leaseMs, timeoutMs);
  }

  boolean verifyInDatabase(Lease lease) {
    return executeStep(
        "verify lease " + lease.name(),
        (c, timeoutMs) ->
            dialect.verifyStep(c, lease.name(), lease.holder(), lease.term(), timeoutMs),
        null);
  }

  /** The release statement of {@code lease}, one bounded step. */
  private Dialect.StepCall<Boolean> releaseCall(String name, String holder, long term) {
    return (c, timeoutMs) -> dialect.releaseStep(c, name, holder, term, timeoutMs);
  }

  /** True once {@link #close()} began. */
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
   *
   * @throws IllegalStateException if this manager was closed meanwhile (the claim is released)
   */
  Lease adoptClaim(String name, String holder, long term, long claimStartNanos) {
    Lease lease = track(new Lease(this, name, holder, instance, term, claimStartNanos));
    log.info("claimed lease {} term {} instance {}", name, term, instance);
    safely(l -> l.claimed(lease));
    return lease;
  }

  /**
   * {@link #adoptClaim} for a claim of many keys in one statement (a group's pass): the same
   * tracking and listeners, the per-lease line at DEBUG (the caller logs one line for the batch).
   */
  Lease adoptBatchClaim(String name, String holder, long term, long claimStartNanos) {
    Lease lease = track(new Lease(this, name, holder, instance, term, claimStartNanos));
    log.debug("claimed lease {} term {} instance {}", name, term, instance);
    safely(l -> l.claimed(lease));
    return lease;
  }

  /**
   * Takes over a lease a statement of a group adopted for this instance (transferred to it, {@link
   * Lease#transferTo}): tracked like a claim, announced as {@link LeaseListener#adopted}, the
   * per-lease line at DEBUG (the caller logs one line for the batch).
   */
  Lease adoptBatchTransfer(String name, String holder, long term, long claimStartNanos) {
    Lease lease = track(new Lease(this, name, holder, instance, term, claimStartNanos));
    log.debug("adopted lease {} term {} instance {} (transferred to it)", name, term, instance);
    safely(l -> l.adopted(lease));
    return lease;
  }

  // ---- the end of leases: release and loss ----------------------------------------------------

  /**
   * Releases {@code leases} in the order every release follows: interrupts the work under all of
   * them, waits up to one grace period for it to end, then releases the rows. Work that has not
   * ended by then is given up on (logged; never the failure policy: a release is not a loss). A
   * lease another thread is releasing is waited for, bounded.
   *
   * @param rethrow whether a failed release statement is thrown (one lease's {@link
   *     Lease#release()}) or only logged (close, a scheduler closing)
   */
  void release(Collection<Lease> leases, boolean rethrow) {
    List<Lease> ours = new ArrayList<>();
    List<Lease> others = new ArrayList<>();
    List<List<BoundWork>> stopping = new ArrayList<>();
    for (Lease l : leases) {
      List<BoundWork> works = l.beginRelease();
      if (works == null) {
        others.add(l);
      } else {
        ours.add(l);
        stopping.add(works);
      }
    }
    boolean releaseFirst = faults.contains(TestFault.RELEASE_BEFORE_STOPPING_WORK);
    LeaseException failure = releaseFirst ? giveBackAll(ours, rethrow) : null;
    for (List<BoundWork> works : stopping) {
      works.forEach(BoundWork::requestStop);
    }
    long deadline = System.nanoTime() + timings.gracePeriod().toNanos();
    boolean interrupted = false;
    for (List<BoundWork> works : stopping) {
      for (BoundWork w : works) {
        try {
          w.awaitEnd(deadline - System.nanoTime());
        } catch (InterruptedException e) {
          interrupted = true; // stop waiting, release at once
          deadline = System.nanoTime();
        }
      }
    }
    if (!releaseFirst) {
      failure = giveBackAll(ours, rethrow);
    }
    for (int i = 0; i < ours.size(); i++) {
      Lease lease = ours.get(i);
      for (BoundWork w : stopping.get(i)) {
        if (!w.hasEnded()) {
          log.error(
              "work thread {} under lease {} term {} did not stop within the grace period of {} ms"
                  + " of its release; released anyway (a release is not a loss: no failure"
                  + " policy), its fenced transactions are refused from now on",
              w.thread.getName(),
              lease.name(),
              lease.term(),
              timings.gracePeriod().toMillis());
          if (faults.contains(TestFault.POLICY_ON_RELEASE)) {
            runPolicy(lease, w.thread);
          }
          w.giveUp();
        } else {
          lease.detach(w);
        }
      }
    }
    long bound = timings.gracePeriod().toNanos() + 2 * timings.attemptTimeout().toNanos();
    for (Lease l : others) {
      try {
        if (!l.awaitOver(bound)) {
          log.warn("{} is still being released by another thread", l);
        }
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (failure != null && rethrow) {
      throw failure;
    }
  }

  /**
   * Marks {@code leases} released and releases their rows in batches: one statement per {@link
   * Dialect#MAX_RENEWALS_PER_STATEMENT} leases ({@link Dialect#releaseAll}), one INFO line per
   * batch and a DEBUG line per lease. A single lease keeps its own statement ({@link #giveBack}).
   * The caller has stopped the work under every lease before (the order of every release).
   */
  private LeaseException giveBackAll(List<Lease> leases, boolean rethrow) {
    if (leases.size() <= 1 || faults.contains(TestFault.RELEASE_ONE_BY_ONE)) {
      return giveBack(leases, rethrow);
    }
    List<Lease> releasing = new ArrayList<>();
    for (Lease lease : leases) {
      if (lease.completeRelease()) {
        releasing.add(lease); // else lost meanwhile: not ours to release
      }
    }
    LeaseException first = null;
    int chunk = Dialect.MAX_RENEWALS_PER_STATEMENT;
    for (int from = 0; from < releasing.size(); from += chunk) {
      List<Lease> batch = releasing.subList(from, Math.min(releasing.size(), from + chunk));
      if (batch.size() == 1) {
        LeaseException e = releaseOne(batch.get(0), rethrow);
        first = first == null ? e : first;
        continue;
      }
      List<Dialect.Held> held = new ArrayList<>(batch.size());
      long minTerm = Long.MAX_VALUE;
      long maxTerm = Long.MIN_VALUE;
      for (Lease l : batch) {
        held.add(new Dialect.Held(l.name(), l.holder(), l.term()));
        minTerm = Math.min(minTerm, l.term());
        maxTerm = Math.max(maxTerm, l.term());
      }
      int released;
      try {
        released =
            executeStep(
                "release " + batch.size() + " leases",
                (c, timeoutMs) -> dialect.releaseAll(c, held, timeoutMs),
                null);
      } catch (LeaseException e) {
        first = first == null ? e : first;
        if (!rethrow) {
          log.warn(
              "could not release {} leases; they expire by themselves: {}",
              batch.size(),
              e.getMessage());
        }
        continue;
      }
      log.info(
          "released {} leases (terms {}..{}) instance {} in one statement{}",
          batch.size(),
          minTerm,
          maxTerm,
          instance,
          released == batch.size()
              ? ""
              : "; the database no longer had " + (batch.size() - released) + " of them");
      for (Lease lease : batch) {
        log.debug("released lease {} term {} instance {}", lease.name(), lease.term(), instance);
        safely(l -> l.released(lease));
      }
    }
    return first;
  }

  /** The release statement of one lease already marked released; its failure, if any. */
  private LeaseException releaseOne(Lease lease, boolean rethrow) {
    boolean released;
    try {
      released = releaseInDatabase(lease);
    } catch (LeaseException e) {
      if (!rethrow) {
        log.warn("could not release {}; it expires by itself: {}", lease, e.getMessage());
      }
      return e;
    }
    log.info(
        "released lease {} term {} instance {}{}",
        lease.name(),
        lease.term(),
        instance,
        released ? "" : " (the database no longer had it)");
    safely(l -> l.released(lease));
    return null;
  }

  /**
   * {@link #transfer} of many leases to one successor (a group moving keys to the member that needs
   * them), in the order of a release: stops the work bound to all of them (interrupts, waits up to
   * one grace period), ends them here, then one transfer statement per {@link
   * Dialect#MAX_RENEWALS_PER_STATEMENT} leases ({@link Dialect#transferAll}); one INFO line per
   * batch, a DEBUG line and {@link LeaseListener#transferred} per lease. A batch whose statement
   * failed is logged: its rows are either transferred or expire as usual.
   *
   * @return the new term of each lease transferred, by name
   */
  java.util.Map<String, Long> transferAll(
      Collection<Lease> leases, String successor, Duration adoptWithin) {
    List<Lease> ours = new ArrayList<>();
    List<List<BoundWork>> stopping = new ArrayList<>();
    for (Lease l : leases) {
      List<BoundWork> works = l.beginRelease();
      if (works != null) {
        ours.add(l);
        stopping.add(works);
      }
    }
    for (List<BoundWork> works : stopping) {
      works.forEach(BoundWork::requestStop);
    }
    long deadline = System.nanoTime() + timings.gracePeriod().toNanos();
    boolean interrupted = false;
    for (List<BoundWork> works : stopping) {
      for (BoundWork w : works) {
        try {
          w.awaitEnd(deadline - System.nanoTime());
        } catch (InterruptedException e) {
          interrupted = true;
          deadline = System.nanoTime();
        }
      }
    }
    java.util.Map<String, Long> transferred = new java.util.HashMap<>();
    try {
      List<Lease> moving = new ArrayList<>();
      for (int i = 0; i < ours.size(); i++) {
        Lease lease = ours.get(i);
        for (BoundWork w : stopping.get(i)) {
          if (!w.hasEnded()) {
            log.error(
                "work thread {} under lease {} term {} did not stop within the grace period of {}"
                    + " ms of its transfer; transferred anyway (its fenced transactions are"
                    + " refused from now on)",
                w.thread.getName(),
                lease.name(),
                lease.term(),
                timings.gracePeriod().toMillis());
            w.giveUp();
          } else {
            lease.detach(w);
          }
        }
        if (lease.completeRelease()) {
          moving.add(lease); // else lost meanwhile: not ours to hand over
        }
      }
      long adoptMs = adoptWithin.toMillis();
      int chunk = Dialect.MAX_RENEWALS_PER_STATEMENT;
      for (int from = 0; from < moving.size(); from += chunk) {
        List<Lease> batch = moving.subList(from, Math.min(moving.size(), from + chunk));
        List<Dialect.Held> held = new ArrayList<>(batch.size());
        for (Lease l : batch) {
          held.add(new Dialect.Held(l.name(), l.holder(), l.term()));
        }
        java.util.Map<String, Long> terms;
        try {
          terms =
              executeStep(
                  "transfer " + batch.size() + " leases to " + successor,
                  (c, timeoutMs) -> dialect.transferAll(c, held, successor, adoptMs, timeoutMs),
                  null);
        } catch (LeaseException e) {
          log.warn(
              "could not transfer {} leases to {}; each is transferred or expires as usual: {}",
              batch.size(),
              successor,
              e.getMessage());
          continue;
        }
        log.info(
            "transferred {} leases instance {} to {} in one statement (adopt within {} ms){}",
            terms.size(),
            instance,
            successor,
            adoptMs,
            terms.size() == batch.size()
                ? ""
                : "; the database no longer had " + (batch.size() - terms.size()) + " of them");
        for (Lease lease : batch) {
          Long newTerm = terms.get(lease.name());
          if (newTerm == null) {
            continue;
          }
          transferred.put(lease.name(), newTerm);
          log.debug(
              "transferred lease {} term {} instance {} to {} at term {}",
              lease.name(),
              lease.term(),
              instance,
              successor,
              newTerm);
          safely(l -> l.transferred(lease, successor, newTerm));
        }
      }
      return transferred;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Transfers {@code lease} to {@code successor} in the order of a release: stops the work bound to
   * it (interrupts, waits up to the grace period), ends the lease here (keeper stopped), then runs
   * the transfer statement, which fences this holder as a claim of the next term would.
   *
   * @return the new term, or null if the lease was not ours any more (ended, being released, or the
   *     database no longer had it)
   */
  Long transfer(Lease lease, String successor, Duration adoptWithin) {
    List<BoundWork> works = lease.beginRelease();
    if (works == null) {
      return null;
    }
    works.forEach(BoundWork::requestStop);
    long deadline = System.nanoTime() + timings.gracePeriod().toNanos();
    boolean interrupted = false;
    for (BoundWork w : works) {
      try {
        w.awaitEnd(deadline - System.nanoTime());
      } catch (InterruptedException e) {
        interrupted = true;
        deadline = System.nanoTime();
      }
    }
    try {
      for (BoundWork w : works) {
        if (!w.hasEnded()) {
          log.error(
              "work thread {} under lease {} term {} did not stop within the grace period of {} ms"
                  + " of its transfer; transferred anyway (its fenced transactions are refused"
                  + " from now on)",
              w.thread.getName(),
              lease.name(),
              lease.term(),
              timings.gracePeriod().toMillis());
          w.giveUp();
        } else {
          lease.detach(w);
        }
      }
      if (!lease.completeRelease()) {
        return null; // lost meanwhile: not ours to hand over
      }
      long adoptMs = adoptWithin.toMillis();
      Long newTerm =
          executeStep(
              "transfer lease " + lease.name() + " to " + successor,
              (c, timeoutMs) ->
                  dialect.transferStep(
                      c, lease.name(), lease.holder(), lease.term(), successor, adoptMs, timeoutMs),
              null);
      if (newTerm == null) {
        log.warn(
            "could not transfer lease {} term {} instance {} to {}: the database no longer had it",
            lease.name(),
            lease.term(),
            instance,
            successor);
        return null;
      }
      log.info(
          "transferred lease {} term {} instance {} to {} at term {} (adopt within {} ms)",
          lease.name(),
          lease.term(),
          instance,
          successor,
          newTerm,
          adoptMs);
      safely(l -> l.transferred(lease, successor, newTerm));
      return newTerm;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Marks {@code leases} released and runs their release statements. */
  private LeaseException giveBack(List<Lease> leases, boolean rethrow) {
    LeaseException first = null;
    for (Lease lease : leases) {
      if (!lease.completeRelease()) {
        continue; // lost meanwhile: not ours to release
      }
      boolean released;
      try {
        released = releaseInDatabase(lease);
      } catch (LeaseException e) {
        if (first == null) {
          first = e;
        }
        if (!rethrow) {
          log.warn("could not release {}; it expires by itself: {}", lease, e.getMessage());
        }
        continue;
      }
      log.info(
          "released lease {} term {} instance {}{}",
          lease.name(),
          lease.term(),
          instance,
          released ? "" : " (the database no longer had it)");
      safely(l -> l.released(lease));
    }
    return first;
  }

  private boolean releaseInDatabase(Lease lease) {
    return executeStep(
        "release lease " + lease.name(),
        releaseCall(lease.name(), lease.holder(), lease.term()),
        null);
  }

  /**
   * The rest of a loss, off the thread that found it (a keeper thread, or the application's thread
   * that asked {@link Lease#isHeld()}): the onLoss callbacks and the listeners on one task of the
   * loss executor; the grace period on another, then the failure policy if work still runs, else (a
   * loss at the local deadline) the release of the row, so a successor need not wait for it to
   * expire. The grace period is timed on the loss executor, not on the keeper's scheduler, so it
   * still ends in the failure policy when close() stopped the scheduler.
   */
  void handleLoss(Lease lease, LossReason reason, List<BoundWork> works) {
    Runnable callbacks =
        () -> {
          lease.runLossCallbacks();
          safely(l -> l.lost(lease, reason));
        };
    if (faults.contains(TestFault.LOSS_HANDLING_INLINE)) {
      callbacks.run();
    } else {
      onLossExecutor(callbacks);
    }
    boolean releaseRow =
        reason == LossReason.LOCAL_DEADLINE && !faults.contains(TestFault.NO_RELEASE_AT_DEADLINE);
    if (works.isEmpty()) {
      if (releaseRow) {
        releaseLost(lease);
      }
      return;
    }
    long graceNanos = timings.gracePeriod().toNanos();
    if (faults.contains(TestFault.GRACE_ON_KEEPER_SCHEDULER)) {
      try {
        scheduler.schedule(
            () ->
                works.stream()
                    .filter(w -> !w.hasEnded())
                    .findFirst()
                    .ifPresent(w -> runPolicy(lease, w.thread)),
            graceNanos,
            TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        // the bug: no failure policy once the scheduler is shut down
      }
      return;
    }
    onLossExecutor(
        () -> {
          long deadline = System.nanoTime() + graceNanos;
          boolean allStopped = true;
          for (BoundWork w : works) {
            if (!awaitQuietly(w, deadline - System.nanoTime())) {
              // still running under a lost lease: the failure policy decides (once per lease);
              // the row is not released while the work may still act under it
              allStopped = false;
              runPolicy(lease, w.thread);
            }
          }
          if (allStopped && releaseRow) {
            releaseLost(lease);
          }
        });
  }

  private void onLossExecutor(Runnable task) {
    try {
      lossExecutor.execute(task);
    } catch (RejectedExecutionException e) {
      // closed: the loss still gets its handling, on a thread of its own
      Thread t = new Thread(task, "lease-loss-after-close");
      t.setDaemon(true);
      t.start();
    }
  }

  private void runPolicy(Lease lease, Thread worker) {
    if (!lease.claimPolicyRun()) {
      return;
    }
    try {
      failurePolicy.workDidNotStop(lease, worker);
    } catch (RuntimeException e) {
      log.error("failure policy for {} failed", lease, e);
    }
  }

  /**
   * Releases a lease lost at its local deadline: the database may still have it as ours (the local
   * deadline comes before the expiry), and the release statement checks holder and term, so it can
   * only give back our own claim. Best effort, bounded by the attempt timeout, never waited for.
   */
  private void releaseLost(Lease lease) {
    submitStep(
            "release lost lease " + lease.name(),
            releaseCall(lease.name(), lease.holder(), lease.term()),
            null)
        .whenComplete(
            (released, e) -> {
              if (e != null) {
                log.debug(
                    "could not release lost lease {} term {}; it expires by itself: {}",
                    lease.name(),
                    lease.term(),
                    e.getMessage());
              } else if (released) {
                log.info(
                    "released lost lease {} term {} instance {}: a successor may claim it now",
                    lease.name(),
                    lease.term(),
                    instance);
              }
            });
  }

  /** A claim that completed after its caller gave up: nobody holds it, so give it back. */
  private void releaseOrphan(String name, String holder, long term) {
    log.warn(
        "the claim of lease {} term {} completed after its attempt timed out; releasing it",
        name,
        term);
    submitStep("release orphaned claim of " + name, releaseCall(name, holder, term), null);
  }

  private static boolean awaitQuietly(BoundWork w, long nanos) {
    boolean interrupted = false;
    long deadline = System.nanoTime() + nanos;
    try {
      while (true) {
        try {
          return w.awaitEnd(deadline - System.nanoTime());
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  // ---- attempts: lease SQL bounded as a whole by the attempt timeout --------------------------

  /**
   * Runs lease SQL on a connection of its own and waits for it at most the attempt timeout, the
   * connection borrow included: a stalled pool or server cannot hold the caller longer. The attempt
   * runs on the attempt executor; its statements are also bounded in the database and on the
   * network by what is left of the attempt timeout.
   */
  <T> T execute(String what, Dialect.SqlCall<T> call) {
    return execute(what, call, null);
  }

  /**
   * Like {@link #execute(String, Dialect.SqlCall)}; {@code late} gets the result of an attempt that
   * completed after the caller gave up on it.
   */
  <T> T execute(String what, Dialect.SqlCall<T> call, Consumer<T> late) {
    return run(what, (c, timeoutMs) -> call.call(c), false, late);
  }

  /**
   * A lease step (claim, renew, release, verify): one statement that carries its own bounds ({@link
   * Dialect#inStep}), bounded as a whole like {@link #execute(String, Dialect.SqlCall)}.
   */
  <T> T executeStep(String what, Dialect.StepCall<T> call, Consumer<T> late) {
    return run(what, call, true, late);
  }

  private <T> T run(String what, Dialect.StepCall<T> call, boolean step, Consumer<T> late) {
    if (faults.contains(TestFault.UNBOUNDED_ATTEMPT)) {
      return attempt(what, call, step, -1, null, null); // the bug: the borrow has no bound
    }
    if (ownsAttemptExecutor) {
      return runHere(what, call, step, late);
    }
    // an attempt executor given through the test hook is where every attempt runs (a paused
    // process's seam), so the hand-off stays
    CompletableFuture<T> f = submit(what, call, step, late);
    long budget = timings.attemptTimeout().toNanos();
    long deadline = System.nanoTime() + budget;
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true; // the wait is bounded anyway; the flag is put back afterwards
        } catch (TimeoutException e) {
          f.completeExceptionally(timedOut(what));
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          if (cause instanceof RuntimeException r) {
            throw r;
          }
          if (cause instanceof Error err) {
            throw err;
          }
          throw new LeaseException("could not " + what + ": " + cause, cause);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Runs an attempt on the calling thread. Handing it to an attempt thread and waiting for the
   * answer cost about as much as the claim statement itself (issue 24: a claim+release cycle spent
   * about 1 ms outside the database). The bounds stay those of the hand-off: the borrow is
   * interrupted at the deadline ({@link BorrowWatchdog}); the statements carry the rest of the
   * attempt timeout as their network timeout and lock or busy timeout; a result that comes after
   * the deadline is a timeout for the caller and goes to {@code late}, as it did when the caller
   * stopped waiting. An interrupt of the caller is deferred until the attempt ends, as the
   * hand-off's bounded wait deferred it: a release from a thread that loss handling interrupted
   * still runs.
   */
  private <T> T runHere(String what, Dialect.StepCall<T> call, boolean step, Consumer<T> late) {
    long deadline = attemptClock.nanoTime() + timings.attemptTimeout().toNanos();
    boolean[] interrupted = {Thread.interrupted()}; // a pool refuses an interrupted borrower
    try {
      T result = attempt(what, call, step, deadline, null, interrupted);
      if (attemptClock.nanoTime() - deadline > 0) {
        if (late != null) {
          late.accept(result);
        }
        throw timedOut(what);
      }
      return result;
    } finally {
      if (interrupted[0]) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Borrows a connection on the calling thread, interrupted at {@code deadlineNanos}. An interrupt
   * from elsewhere ends the pool's wait too: it is noted in {@code interrupted} and the borrow
   * tried again until the deadline.
   */
  private Connection borrowHere(String what, long deadlineNanos, boolean[] interrupted)
      throws SQLException {
    if (attemptClock != MonotonicClock.SYSTEM) {
      return dataSource.getConnection(); // virtual time: a simulation's pool never waits
    }
    while (true) {
      BorrowWatchdog.Guard guard = BorrowWatchdog.guard(deadlineNanos);
      Connection c;
      try {
        c = dataSource.getConnection();
      } catch (SQLException | RuntimeException e) {
        if (!guard.end()) {
          LeaseException timeout = timedOut(what);
          timeout.addSuppressed(e);
          throw timeout;
        }
        if (Thread.interrupted()) {
          interrupted[0] = true;
          if (System.nanoTime() - deadlineNanos < 0) {
            continue;
          }
          throw timedOut(what);
        }
        throw e;
      }
      if (!guard.end()) {
        closeQuietly(c);
        throw timedOut(what);
      }
      return c;
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException | RuntimeException e) {
      log.debug("could not give back a connection borrowed after the attempt timeout", e);
    }
  }

  /**
   * Starts an attempt on the attempt executor (on the calling thread if the executor refuses it, as
   * after {@link #close()}); the future completes with its result or its {@link LeaseException}.
   * Completing the future first (a timeout) abandons the attempt: {@code late} then gets its
   * result, if it has one.
   */
  <T> CompletableFuture<T> submitAttempt(String what, Dialect.SqlCall<T> call, Consumer<T> late) {
    return submit(what, (c, timeoutMs) -> call.call(c), false, late);
  }

  /** {@link #submitAttempt} of a one-statement step ({@link #executeStep}). */
  <T> CompletableFuture<T> submitStep(String what, Dialect.StepCall<T> call, Consumer<T> late) {
    return submit(what, call, true, late);
  }

  private <T> CompletableFuture<T> submit(
      String what, Dialect.StepCall<T> call, boolean step, Consumer<T> late) {
    long deadline = attemptClock.nanoTime() + timings.attemptTimeout().toNanos();
    CompletableFuture<T> f = new CompletableFuture<>();
    Runnable task =
        () -> {
          if (f.isDone()) {
            return; // abandoned before it started
          }
          try {
            T result = attempt(what, call, step, deadline, f, null);
            if (!f.complete(result) && late != null) {
              late.accept(result);
            }
          } catch (Throwable t) {
            f.completeExceptionally(t);
          }
        };
    try {
      attemptExecutor.execute(task);
    } catch (RejectedExecutionException e) {
      task.run();
    }
    return f;
  }

  /** Abandons an attempt that ran out of time, completing it on an attempt thread. */
  void expire(CompletableFuture<?> attempt, String what) {
    if (attempt.isDone()) {
      return;
    }
    LeaseException timeout = timedOut(what);
    try {
      attemptExecutor.execute(() -> attempt.completeExceptionally(timeout));
    } catch (RejectedExecutionException e) {
      attempt.completeExceptionally(timeout);
    }
  }

  static Throwable unwrap(Throwable t) {
    return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
  }

  /** An attempt that ran out of its attempt timeout ({@link RenewalOutcome#TIMEOUT}). */
  static final class AttemptTimedOut extends LeaseException {
    private static final long serialVersionUID = 1L;

    AttemptTimedOut(String message) {
      super(message);
    }
  }

  private LeaseException timedOut(String what) {
    return new AttemptTimedOut(
        "could not "
            + what
            + " in lease table "
            + table
            + " on "
            + dialect.product()
            + " within the attempt timeout of "
            + timings.attemptTimeout().toMillis()
            + " ms (borrowing the connection included); the database or the pool is too slow or"
            + " exhausted: give the LeaseManager a small pool of its own");
  }

  /**
   * One attempt on a connection of its own. {@code deadlineNanos} (System.nanoTime) bounds what is
   * left for the statements after the borrow; -1: the attempt timeout counts from after the borrow
   * (the negative control of an unbounded borrow). {@code here}: on the caller's thread ({@link
   * #runHere}), which the borrow then notes a deferred interrupt in.
   */
  private <T> T attempt(
      String what,
      Dialect.StepCall<T> call,
      boolean step,
      long deadlineNanos,
      CompletableFuture<?> abandoned,
      boolean[] here) {
    try (Connection c =
        here != null ? borrowHere(what, deadlineNanos, here) : dataSource.getConnection()) {
      long timeoutMs =
          deadlineNanos == -1
              ? timings.attemptTimeout().toMillis()
              : (deadlineNanos - attemptClock.nanoTime()) / 1_000_000;
      if (timeoutMs <= 0 || (abandoned != null && abandoned.isDone())) {
        throw timedOut(what);
      }
      // The connection is the application's (pooled): its network timeout is put back afterwards,
      // since not every pool resets it (PooledSessionTest). Set on the calling thread: MySQL
      // Connector/J applies it on the given executor, so an asynchronous one would let the
      // statement start unbounded and the restore overtake the set.
      int savedNetworkTimeout = -1;
      try {
        savedNetworkTimeout = c.getNetworkTimeout();
        c.setNetworkTimeout(Runnable::run, (int) Math.min(Integer.MAX_VALUE, timeoutMs));
      } catch (SQLFeatureNotSupportedException | AbstractMethodError e) {
        // SQLite has no network; the busy timeout bounds it instead
      }
      try {
        if (step && !faults.contains(TestFault.STEP_IN_SESSION)) {
          // the statement's own bound (lock wait, busy timeout) ends a little before the caller
          // stops waiting: a claim that waited for a lock then fails in the database instead of
          // going through just after its caller gave up (it would be released at once, but its
          // term would be spent: StrictFencingTest on SQLite)
          long margin = Math.min(timeoutMs / 5, 250);
          return dialect.inStep(c, Math.max(1, timeoutMs - margin), call);
        }
        long bound = timeoutMs;
        return dialect.inLeaseSession(c, timeoutMs, conn -> call.call(conn, bound));
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
        + "\") in your migrations (the DDL is also in docs/leases.md)";
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
    private MonotonicClock attemptClock = MonotonicClock.SYSTEM;
    private ScheduledExecutorService scheduler;
    private Executor attemptExecutor;
    private Executor lossExecutor;
    private Consumer<Lease> afterWork;
    private final Set<TestFault> faults = EnumSet.noneOf(TestFault.class);
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

    /** Test hook ({@link LeaseInternals#faultForTesting}): a deliberately broken mechanism. */
    Builder faultForTesting(TestFault fault) {
      faults.add(Objects.requireNonNull(fault, "fault"));
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
        dialect = Dialect.detect(c, table, clockFunction, faults);
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
