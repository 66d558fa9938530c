package dev.lease.core.internal;

import dev.lease.core.Lease;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseManager;
import dev.lease.core.dialect.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * What lease-jdbc, lease-agent, lease-core's scheduler, the property tests and the benchmarks need
 * from lease-core and applications must not call: the verify statement inside a fenced transaction,
 * listener events of fenced transactions, the process-wide lease of the agent's leader mode, the
 * manager's SQL session for the scheduler, and the builder's test hooks.
 *
 * <p><b>Not API.</b> It may change in any release; an application that calls it can break the
 * guarantees of its leases (a placeholder lease bound process-wide, a test clock in production).
 *
 * <p>How: the "shared secrets" pattern. {@code dev.lease.core} keeps these operations
 * package-private and registers a {@link LeaseAccess} implementation when {@link LeaseManager}
 * loads; every method here is a plain static call through it (no reflection after the first call).
 */
public final class LeaseInternals {

  private static volatile LeaseAccess access;

  private LeaseInternals() {}

  /**
   * Called once, by {@code dev.lease.core} when {@link LeaseManager} is initialised.
   *
   * @throws IllegalStateException if called again, or with another implementation
   */
  public static void register(LeaseAccess implementation) {
    if (!implementation.getClass().getName().equals("dev.lease.core.InternalAccess")
        || implementation.getClass().getClassLoader() != LeaseInternals.class.getClassLoader()) {
      throw new IllegalStateException("only lease-core registers its internal access");
    }
    synchronized (LeaseInternals.class) {
      if (access != null) {
        throw new IllegalStateException("lease-core's internal access is already registered");
      }
      access = implementation;
    }
  }

  private static LeaseAccess access() {
    LeaseAccess a = access;
    if (a != null) {
      return a;
    }
    try {
      // initialising LeaseManager registers the implementation (its static initialiser)
      Class.forName(LeaseManager.class.getName(), true, LeaseInternals.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("lease-core is incomplete: no LeaseManager", e);
    }
    a = access;
    if (a == null) {
      throw new IllegalStateException("lease-core did not register its internal access");
    }
    return a;
  }

  // ---- fenced transactions (lease-jdbc) --------------------------------------------------------

  /**
   * Runs the verify statement on {@code connection} inside the caller's open transaction. In strict
   * mode it also takes the lock on the lease row that the claim of the next term waits for, and
   * (PostgreSQL) bounds the transaction's idle time by {@code idleInTransaction}.
   *
   * @return true if the database confirms this holder at this term
   */
  public static boolean verifyInTransaction(
      Lease lease, Connection connection, boolean strict, Duration idleInTransaction)
      throws SQLException {
    return access().verifyInTransaction(lease, connection, strict, idleInTransaction);
  }

  /**
   * Runs {@code sql} (from {@link #verifySql} or {@link #clientCheckedVerifySql}) as the verify in
   * the caller's open transaction. The server's refusal is thrown as the database raised it ({@link
   * #isRefusal} tells it apart); false means the verify returned no row. When the database confirms
   * the holder, a STRICT verify also reports the session's current bounds it reads along ({@link
   * Dialect#readSessionBounds}: MySQL/MariaDB lock wait and idle-in-transaction timeout, seconds,
   * -1 where there is none) into {@code sessionBounds} (unchanged on other databases), so
   * lease-jdbc sets them only when a session lacks them.
   */
  public static boolean verifyInTransaction(
      Lease lease,
      Connection connection,
      String sql,
      boolean strict,
      Duration idleInTransaction,
      long[] sessionBounds)
      throws SQLException {
    return access()
        .verifyInTransaction(lease, connection, sql, strict, idleInTransaction, sessionBounds);
  }

  /**
   * The SQL text of the verify statement of {@code lease}'s database, which raises an error in the
   * server when the lease is not held ({@link Dialect#verifySql}); its parameters are {@link
   * #verifyParameters}.
   */
  public static String verifySql(Lease lease, boolean strict) {
    return dialect(lease.manager()).verifyText(strict);
  }

  /**
   * The verify before the server refused ({@link Dialect#clientCheckedVerifySql}): negative
   * controls and comparison benchmarks only.
   */
  public static String clientCheckedVerifySql(Lease lease, boolean strict) {
    return dialect(lease.manager()).clientCheckedVerifySql(strict);
  }

  /** The verify a commit carries as its proof ({@link Dialect#commitProofSql}). */
  public static String commitProofSql(Lease lease, boolean strict) {
    return dialect(lease.manager()).commitProofText(strict);
  }

  /** True if {@code e} is (or chains) a refusing verify's error ({@link Dialect#isRefusal}). */
  public static boolean isRefusal(SQLException e) {
    return Dialect.isRefusal(e);
  }

  /** The values of {@link #verifySql}'s parameters for {@code lease}, in order (String or Long). */
  public static List<Object> verifyParameters(
      Lease lease, boolean strict, Duration idleInTransaction) {
    return dialect(lease.manager())
        .verifyParameters(
            lease.name(), lease.holder(), lease.term(), strict, idleInTransaction.toMillis());
  }

  /**
   * Binds {@link #verifySql}'s parameters for {@code lease} from index {@code first} on; returns
   * the next free index.
   */
  public static int bindVerify(
      Lease lease, PreparedStatement ps, int first, boolean strict, Duration idleInTransaction)
      throws SQLException {
    return dialect(lease.manager())
        .bindVerify(
            ps,
            first,
            lease.name(),
            lease.holder(),
            lease.term(),
            strict,
            idleInTransaction.toMillis());
  }

  /**
   * Waits, at most {@code max}, while the keeper's renewal of {@code lease} is in flight; returns
   * at once when none is. lease-jdbc calls it before a new fenced transaction on SQLite, whose busy
   * handler has no queue: without it, back-to-back writers under the lease can starve the renewal's
   * write.
   */
  public static void awaitRenewal(Lease lease, Duration max) throws InterruptedException {
    access().awaitRenewal(lease, max);
  }

  /**
   * The database refused a fenced transaction under {@code lease} (lease-jdbc's LF001): the lease
   * is lost at once ({@link dev.lease.core.LossReason#DATABASE}), its loss handling runs (the work
   * under it is interrupted), and {@code isHeld()} answers false from now on, so every later
   * transaction is refused locally without a round trip. Nothing happens if it already ended.
   */
  public static void lostInDatabase(Lease lease) {
    access().lostInDatabase(lease);
  }

  /**
   * The statements lease-jdbc runs once on a connection before STRICT verifies, bounding how long a
   * paused holder's open transaction can delay a takeover (MySQL/MariaDB lock wait and idle
   * timeouts); empty on databases whose verify statement carries the bound (PostgreSQL) or that
   * have no server (SQLite).
   */
  public static List<String> strictSessionStatements(
      LeaseManager manager, Duration idleInTransaction, Duration lockWait) {
    return access().strictSessionStatements(manager, idleInTransaction, lockWait);
  }

  /** Calls each listener of {@code manager} with {@code event}, logging what they throw. */
  public static void notifyListeners(LeaseManager manager, Consumer<LeaseListener> event) {
    access().notifyListeners(manager, event);
  }

  /** The lease bound to this thread, else the process-wide lease, or null (allocation-free). */
  public static Lease currentOrNull() {
    return access().currentOrNull();
  }

  // ---- the process-wide lease (lease-agent's leader mode) -------------------------------------

  /**
   * A lease object for {@code name} that this process does not hold: never held, never claimed, its
   * verify finds no row. Bound process-wide it makes fenced transactions fail while another process
   * holds {@code name} (a replica before its first claim).
   */
  public static Lease notHeld(LeaseManager manager, String name) {
    return access().notHeld(manager, name);
  }

  /**
   * Makes {@code lease} the lease of every thread that has none bound itself (null clears it):
   * every fenced transaction of every thread then runs under it, and a lease that is not held
   * refuses them. A thread's own binding still wins.
   */
  public static void bindProcessWide(Lease lease) {
    access().bindProcessWide(lease);
  }

  /** The process-wide lease, if one is set. */
  public static Optional<Lease> processWide() {
    return Optional.ofNullable(access().processWide());
  }

  // ---- the manager's machinery (the scheduler, a LeaseGroup) ----------------------------------

  /**
   * Runs lease SQL on a connection of {@code manager}'s DataSource in a lease session (isolation,
   * time zone, timeouts bounded by the attempt timeout), committed at the end.
   *
   * @throws dev.lease.core.LeaseException if it failed, with a message naming {@code what}
   */
  public static <T> T execute(LeaseManager manager, String what, Dialect.SqlCall<T> call) {
    return access().execute(manager, what, call);
  }

  /** The dialect of {@code manager}'s database. */
  public static Dialect dialect(LeaseManager manager) {
    return access().dialect(manager);
  }

  /** The monotonic clock of {@code manager}'s local deadlines. */
  public static MonotonicClock clock(LeaseManager manager) {
    return access().clock(manager);
  }

  /** A new holder token (random, never reused), for claims made by statements of other classes. */
  public static String mintHolder(LeaseManager manager) {
    return access().mintHolder(manager);
  }

  /**
   * Takes over a lease claimed by another statement than {@code tryClaim}'s (a scheduler's slot
   * claim): tracked for {@link LeaseManager#close()}, logged and announced like any claim.
   *
   * @param fromAnother whether the name's previous term was another instance's ({@link
   *     Lease#fromAnotherInstance})
   * @param claimStartNanos the manager's clock before the claim was sent (the local deadline counts
   *     from it)
   */
  public static Lease adoptClaim(
      LeaseManager manager,
      String name,
      String holder,
      long term,
      boolean fromAnother,
      long claimStartNanos) {
    return access().adoptClaim(manager, name, holder, term, fromAnother, claimStartNanos);
  }

  /**
   * {@link #adoptClaim} of one key of a claim of many in one statement (a group's pass): the
   * per-lease log line is at DEBUG, the caller logs one line for the batch.
   */
  public static Lease adoptBatchClaim(
      LeaseManager manager, String name, String holder, long term, long claimStartNanos) {
    return access().adoptBatchClaim(manager, name, holder, term, claimStartNanos);
  }

  /**
   * {@link #adoptBatchClaim} for a key a group's statement adopted (transferred to this instance):
   * announced as {@code LeaseListener.adopted}.
   */
  public static Lease adoptBatchTransfer(
      LeaseManager manager, String name, String holder, long term, long claimStartNanos) {
    return access().adoptBatchTransfer(manager, name, holder, term, claimStartNanos);
  }

  /**
   * Transfers {@code leases} to the instance {@code successor} in the order of a release (their
   * work stopped first), one statement per 1,000 leases; the new term of each transferred, by name.
   */
  public static java.util.Map<String, Long> transferAll(
      LeaseManager manager,
      java.util.Collection<Lease> leases,
      String successor,
      java.time.Duration adoptWithin) {
    return access().transferAll(manager, leases, successor, adoptWithin);
  }

  /**
   * Ends {@code lease} with {@code end} instead of the release statement (the scheduler's finish,
   * which gives the name back as release does): stops the keeper first. False, without running
   * {@code end}, if the lease is no longer held here.
   */
  public static boolean endWith(Lease lease, BooleanSupplier end) {
    return access().endWith(lease, end);
  }

  /**
   * Releases {@code leases} of {@code manager} together, in the order of every release: interrupts
   * the work under all of them, waits up to one grace period for it to end, then releases the rows;
   * failures are logged. A scheduler closing uses it for the leases of its running rounds.
   */
  public static void release(LeaseManager manager, Collection<Lease> leases) {
    access().release(manager, leases);
  }

  /** True once {@link LeaseManager#close()} began. */
  public static boolean isClosed(LeaseManager manager) {
    return access().isClosed(manager);
  }

  // ---- work on the caller's own thread (the Spring starter's @Leased methods) ------------------

  /**
   * Binds the calling thread to {@code lease} as work under it, as {@link LeaseManager#runUnder}
   * binds the thread it starts, for code that runs work under a lease on its caller's thread (so
   * that the caller's transaction, security context and MDC still apply): a release ({@code
   * Lease.release()}, {@link LeaseManager#close()}, a scheduler closing) interrupts the thread and
   * waits up to the grace period for it to end before it gives the row back; a loss interrupts it
   * at once, and the failure policy runs if it has not ended after the grace period. The caller
   * binds {@code LeaseContext}, keeps the lease renewed ({@code hold()}), and calls {@link
   * CallerWork#end()} as its last act under the lease, before it releases it.
   *
   * @throws IllegalStateException if the manager is closed or the lease was released
   * @throws dev.lease.core.LeaseLostException if the lease is no longer held
   */
  public static CallerWork bindCurrentThread(Lease lease) {
    return access().bindCurrentThread(lease);
  }

  // ---- the builder's test hooks ---------------------------------------------------------------

  /** The process's monotonic clock; default {@link System#nanoTime()}. For simulations. */
  public static LeaseManager.Builder clock(LeaseManager.Builder builder, MonotonicClock clock) {
    access().clock(builder, clock);
    return builder;
  }

  /**
   * What attempt timeouts are measured by; default {@link System#nanoTime()}. For simulations in
   * virtual time, where a stall of the simulating JVM must not time an attempt out (and the
   * real-time borrow watchdog is then not used).
   */
  public static LeaseManager.Builder attemptClock(
      LeaseManager.Builder builder, MonotonicClock clock) {
    access().attemptClock(builder, clock);
    return builder;
  }

  /**
   * Reads the database clock from the SQL function {@code name()} instead of the server clock: for
   * tests that control database time. Never in production.
   *
   * @throws IllegalArgumentException if {@code name} is not a plain SQL identifier
   */
  public static LeaseManager.Builder clockFunctionForTesting(
      LeaseManager.Builder builder, String name) {
    access().clockFunction(builder, name);
    return builder;
  }

  /**
   * The timers of the keeper and of the grace period; default two daemon threads owned by the
   * manager. A scheduler passed here is not shut down by {@link LeaseManager#close()}.
   */
  public static LeaseManager.Builder scheduler(
      LeaseManager.Builder builder, ScheduledExecutorService scheduler) {
    access().scheduler(builder, scheduler);
    return builder;
  }

  /**
   * Where loss handling runs (listeners' {@code lost}, {@code onLoss} callbacks, the grace period,
   * the failure policy); default a cached pool of daemon threads owned by the manager. The
   * simulations run it inline, on their event loop.
   */
  public static LeaseManager.Builder lossExecutor(LeaseManager.Builder builder, Executor executor) {
    access().lossExecutor(builder, executor);
    return builder;
  }

  /**
   * Builds a manager whose dialect runs deliberately weakened SQL {@code rules} (their
   * implementations live in test sources and the conformance runner only): the negative controls of
   * the tests. Honoured only in a test JVM: with lease's test support or conformance runner on the
   * class path ({@link #TEST_MARKERS}; the agent's test JVMs carry them too); refused anywhere
   * else, so the hook in the shipped jar cannot break a production manager.
   *
   * @throws IllegalStateException outside a test JVM
   */
  public static LeaseManager.Builder sqlRulesForTesting(
      LeaseManager.Builder builder, SqlRules rules) {
    if (!testJvm()) {
      throw new IllegalStateException(
          "weakened SqlRules ("
              + rules.getClass().getName()
              + ") deliberately break a lease manager (negative controls of lease's own tests);"
              + " they are honoured only with lease's test support or conformance runner on the"
              + " class path, and refused here");
    }
    access().sqlRules(builder, rules);
    return builder;
  }

  /**
   * Builds a manager whose lifecycle runs deliberately weakened {@code rules} (their
   * implementations live in test sources only): the negative controls of the tests. Honoured only
   * in a test JVM, exactly as {@link #sqlRulesForTesting}; refused anywhere else, so the hook in
   * the shipped jar cannot weaken a production manager.
   *
   * @throws IllegalStateException outside a test JVM
   */
  public static LeaseManager.Builder rulesForTesting(
      LeaseManager.Builder builder, LifecycleRules rules) {
    if (!testJvm()) {
      throw new IllegalStateException(
          "weakened LifecycleRules ("
              + rules.getClass().getName()
              + ") deliberately break a lease manager (negative controls of lease's own tests);"
              + " they are honoured only with lease's test support or conformance runner on the"
              + " class path, and refused here");
    }
    access().rules(builder, rules);
    return builder;
  }

  /**
   * Classes only lease's test support and conformance runner contain: their presence is the one
   * gate of every weakened rule (lease-core's, lease-jdbc's, lease-agent's).
   */
  static final List<String> TEST_MARKERS =
      List.of(
          "dev.lease.testing.WeakenedFencesAllowed", "dev.lease.conformance.WeakenedFencesAllowed");

  static boolean testJvm() {
    // the only way in, also inside lease-agent's jar: the agent's test JVMs carry lease's test
    // support, whose marker its own switches require too
    return testJvm(LeaseInternals.class.getClassLoader());
  }

  /**
   * Whether {@code loader} sees one of lease's test-only marker classes ({@link #TEST_MARKERS}):
   * the gate lease-jdbc's and lease-agent's weakened rules use too, so all three open and close
   * alike.
   */
  public static boolean testJvm(ClassLoader loader) {
    return TEST_MARKERS.stream().anyMatch(marker -> present(marker, loader));
  }

  private static boolean present(String name, ClassLoader loader) {
    try {
      Class.forName(name, false, loader);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /**
   * Runs {@code hook} in {@code runUnder} after the work ended and before its outcome is decided:
   * the tests make a lease lost in exactly that window. Never in production.
   */
  public static LeaseManager.Builder afterWorkForTesting(
      LeaseManager.Builder builder, Consumer<Lease> hook) {
    access().afterWork(builder, hook);
    return builder;
  }

  /** Where lease statements run; default a cached pool of daemon threads owned by the manager. */
  public static LeaseManager.Builder attemptExecutor(
      LeaseManager.Builder builder, Executor executor) {
    access().attemptExecutor(builder, executor);
    return builder;
  }

  /**
   * Starts a pass of {@code manager}'s batched renewal now, besides its scheduled ones (benchmarks
   * time one pass with it); completes when every statement of the pass answered.
   */
  public static java.util.concurrent.CompletableFuture<Void> renewalPassNow(LeaseManager manager) {
    return access().renewalPassNow(manager);
  }
}
