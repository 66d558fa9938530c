package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A claimed lease: the name, the term (the fencing token, grows on every hand-over), the holder
 * token (random per claim, never reused) and the instance that claimed it.
 *
 * <p>A lease is held until it is released or lost. It is lost when the database says it is no
 * longer this holder's, or when no claim or renewal has succeeded within the local deadline,
 * measured on the process's monotonic clock from the <em>start</em> of the last successful one.
 * Loss is final: a lost lease is never revived; claim again for a new term. Closing a lease
 * releases it.
 *
 * <p>A lease ends in one order. Released (by {@link #release()}, {@link LeaseManager#close()} or a
 * scheduler closing): the work {@link LeaseManager#runUnder} runs under it is interrupted, the
 * release waits up to the grace period for it to end, and only then gives the row back. Lost: the
 * work is interrupted at once; if it has not ended after the grace period, the failure policy runs
 * (once per lease); if it has, and the loss came from the local deadline, the row is released (best
 * effort, holder and term checked), so a successor need not wait for it to expire.
 */
public final class Lease implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Lease.class);

  private enum State {
    HELD,
    LOST,
    RELEASED
  }

  private final LeaseManager manager;
  private final String name;
  private final String holder;
  private final String instance;
  private final long term;
  private final boolean fromAnother;
  private final long localDeadlineNanos;
  private final Set<Consumer<Lease>> lossListeners = ConcurrentHashMap.newKeySet();

  // guarded by this
  private State state = State.HELD;
  private LossReason lossReason;
  private long lastRenewalStart;
  private RenewalKeeper keeper;
  private boolean releasing;
  private final List<BoundWork> works = new ArrayList<>();

  // read without the lock on hot paths (isHeld)
  private volatile boolean ended;
  private volatile long lastRenewalStartVolatile;
  // a renewal attempt of the keeper is in flight (see awaitRenewal)
  private volatile boolean renewing;
  private final Object renewalGate = new Object();

  /** Counted down when the lease ended (released or lost). */
  private final CountDownLatch over = new CountDownLatch(1);

  /** The failure policy runs at most once per lease. */
  private final AtomicBoolean policyRan = new AtomicBoolean();

  Lease(
      LeaseManager manager,
      String name,
      String holder,
      String instance,
      long term,
      boolean fromAnother,
      long claimStartNanos) {
    this.manager = manager;
    this.name = name;
    this.holder = holder;
    this.instance = instance;
    this.term = term;
    this.fromAnother = fromAnother;
    this.localDeadlineNanos = manager.timings().localDeadline().toNanos();
    this.lastRenewalStart = claimStartNanos;
    this.lastRenewalStartVolatile = claimStartNanos;
  }

  public String name() {
    return name;
  }

  /**
   * The fencing token: grows on every hand-over of this name and never repeats for it, even if its
   * row is deleted or a failover lost claims: each hand-over writes {@code max(previous term + 1,
   * the database clock in µs)} (docs/high-availability.md has the clock bound). Not consecutive:
   * compare terms, never count on + 1.
   */
  public long term() {
    return term;
  }

  /**
   * Whether this lease's previous term (the term before this claim or adoption) was another
   * instance's, or the name had none: the lease changed hands. False when this instance held the
   * previous term itself. Read by the claim statement from the row it replaced; true where a
   * statement cannot tell (a group's batch claims, the rerun of an instant cut short).
   */
  public boolean fromAnotherInstance() {
    return fromAnother;
  }

  /** The random token of this claim; never reused. */
  public String holder() {
    return holder;
  }

  /** The instance (process) that claimed it, for humans. */
  public String instance() {
    return instance;
  }

  /** The manager that claimed this lease. */
  public LeaseManager manager() {
    return manager;
  }

  /**
   * True while this lease is neither released nor lost and its local deadline has not passed. A
   * true answer is local knowledge; fenced transactions still verify with the database.
   */
  public boolean isHeld() {
    if (ended) {
      return false;
    }
    if (manager.clock().nanoTime() - lastRenewalStartVolatile >= localDeadlineNanos) {
      checkDeadline();
      return false;
    }
    return true;
  }

  public synchronized boolean isLost() {
    return state == State.LOST;
  }

  public synchronized boolean isReleased() {
    return state == State.RELEASED;
  }

  /** Why the lease was lost, if it was. */
  public synchronized Optional<LossReason> lossReason() {
    return Optional.ofNullable(lossReason);
  }

  /** Time left until the local deadline; zero once it has passed or the lease ended. */
  public Duration remaining() {
    if (ended) {
      return Duration.ZERO;
    }
    long left = localDeadlineNanos - (manager.clock().nanoTime() - lastRenewalStartVolatile);
    return left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
  }

  /**
   * Keeps this lease renewed on the manager's keeper thread until it is released or lost;
   * idempotent, and does nothing on a lease that already ended.
   *
   * @return this lease
   * @throws IllegalStateException if its manager is closed
   */
  public Lease hold() {
    manager.ensureOpen("hold lease " + name);
    synchronized (this) {
      if (state != State.HELD || releasing || keeper != null) {
        return this;
      }
      keeper = new RenewalKeeper(this, manager);
    }
    keeper.start();
    return this;
  }

  /**
   * Renews once, now.
   *
   * @return true if renewed; false if the lease is no longer held (it is then lost, or was
   *     released)
   * @throws LeaseException if the database could not be asked; the lease stays held until its local
   *     deadline
   */
  public boolean renew() {
    if (!isHeld()) {
      return false;
    }
    long start = manager.clock().nanoTime();
    boolean renewedInDatabase;
    try {
      renewedInDatabase = manager.renewInDatabase(this);
    } catch (LeaseException e) {
      RenewalOutcome outcome =
          RenewalKeeper.isTimeout(e) ? RenewalOutcome.TIMEOUT : RenewalOutcome.ERROR;
      manager.safely(l -> l.renewalCompleted(this, outcome));
      throw e;
    }
    if (!renewedInDatabase) {
      manager.safely(l -> l.renewalCompleted(this, RenewalOutcome.LOST));
      lose(LossReason.NOT_HELD);
      return false;
    }
    if (!renewed(start)) {
      if (isLost()) {
        manager.safely(l -> l.renewalCompleted(this, RenewalOutcome.LOST));
      }
      return false;
    }
    manager.safely(l -> l.renewed(this));
    manager.safely(l -> l.renewalCompleted(this, RenewalOutcome.RENEWED));
    return true;
  }

  /**
   * Asks the database whether this holder still holds the lease at this term.
   *
   * @return true if it does; false if not (the lease is then lost)
   */
  public boolean verify() {
    if (!isHeld()) {
      return false;
    }
    boolean held = manager.verifyInDatabase(this);
    if (!held) {
      lose(LossReason.NOT_HELD);
    }
    return held;
  }

  /**
   * Releases the lease: first stops the work {@link LeaseManager#runUnder} runs under it
   * (interrupts it and waits up to the grace period for it to end), then gives the row back, so the
   * database lets anyone claim it at once. Stops the keeper. Idempotent; a lost lease is not
   * released (it is no longer ours to release). Never runs the failure policy: work that did not
   * stop within the grace period is left running, its lease released (its fenced transactions are
   * refused from then on), and logged as an error. Called from the work's own thread, it does not
   * wait for itself.
   *
   * @throws LeaseException if the database could not be reached (the lease then simply expires)
   */
  public void release() {
    manager.releases().release(List.of(this), true);
  }

  /**
   * Hands this lease to the process whose instance is {@code successor}, without a window in which
   * anyone else can claim it; the successor has one lease duration to adopt it. See {@link
   * #transferTo(String, Duration)}.
   */
  public boolean transferTo(String successor) {
    return transferTo(successor, manager.timings().leaseDuration());
  }

  /**
   * Hands this lease to the process whose instance is {@code successor} (its {@link
   * LeaseManager.Builder#instance}), for a rolling deploy or a drain: one statement that, while
   * this holder still holds the lease, writes the next term, pending for the successor, and fences
   * this holder exactly as a claim of the next term would (under STRICT it waits for the
   * transactions verified under this term; none of them commits after it). The row stays taken
   * while the transfer is pending, so no third process can claim it; the successor adopts it at
   * that term at its next {@link LeaseManager#tryClaim} (or {@link LeaseManager#tryAdopt}). If it
   * does not within {@code adoptWithin}, the row expires and the lease is free as usual.
   *
   * <p>It ends this lease in the order of {@link #release()}: the work under it is stopped first
   * (interrupted, waited for up to the grace period), then the statement runs. Do not call it
   * inside a fenced transaction of this lease that is still open: under STRICT the transfer would
   * wait for that transaction (until the attempt timeout).
   *
   * <p>The bound is at most one lease duration: a pending transfer keeps the lease from everyone
   * until it is adopted, so a successor that never comes must not hold it up longer than a crashed
   * holder would (whose lease expires within one lease duration).
   *
   * @param successor the successor's instance name
   * @param adoptWithin how long the successor has to adopt it, by the database clock: from 1 ms to
   *     the manager's lease duration
   * @return true if transferred; false if this lease was no longer held (lost, released, or the
   *     database no longer had it), in which case nothing was written
   * @throws IllegalArgumentException if {@code successor} is not a valid instance name or {@code
   *     adoptWithin} is not positive or longer than the lease duration
   * @throws LeaseException if the database could not be reached; this lease has ended here either
   *     way, and the row is then either transferred or expires as usual
   */
  public boolean transferTo(String successor, Duration adoptWithin) {
    LeaseNames.instance(successor);
    if (adoptWithin == null || adoptWithin.isNegative() || adoptWithin.toMillis() < 1) {
      throw new IllegalArgumentException(
          "adoptWithin must be at least 1 ms, got "
              + adoptWithin
              + "; give the successor time to adopt the lease, for example the lease duration");
    }
    Duration max = manager.timings().leaseDuration();
    if (adoptWithin.compareTo(max) > 0) {
      throw new IllegalArgumentException(
          "adoptWithin ("
              + adoptWithin.toMillis()
              + " ms) is longer than the lease duration ("
              + max.toMillis()
              + " ms): a pending transfer keeps lease "
              + name
              + " from everyone until it is adopted, so it may last at most one lease duration, as"
              + " a crashed holder's lease would; pass at most "
              + max.toMillis()
              + " ms (transferTo(successor) uses the lease duration) or build the manager with a"
              + " longer lease duration");
    }
    if (!isHeld()) {
      return false; // lost (its local deadline passed: it may no longer act) or released
    }
    return manager.releases().transfer(this, successor, adoptWithin) != null;
  }

  /** Same as {@link #release()}. */
  @Override
  public void close() {
    release();
  }

  /**
   * Calls {@code listener} once when this lease is lost (at once if it already is). Loss callbacks
   * run on the manager's loss-handling threads, never on a keeper thread, one after another for one
   * lease; keep them short.
   *
   * @return a handle whose {@code close()} removes the listener
   */
  public Registration onLoss(Consumer<Lease> listener) {
    lossListeners.add(listener);
    if (isLost() && lossListeners.remove(listener)) {
      listener.accept(this);
    }
    return () -> lossListeners.remove(listener);
  }

  /** Removes a listener added with {@link #onLoss}. */
  @FunctionalInterface
  public interface Registration extends AutoCloseable {
    @Override
    void close();
  }

  @Override
  public String toString() {
    return "Lease[" + name + ", term " + term + ", instance " + instance + "]";
  }

  // ---- package-private: lease-jdbc's side, through LeaseInternals -----------------------------

  /**
   * Runs the verify statement on {@code connection} inside the caller's open transaction (the
   * building block of lease-jdbc). In strict mode it also takes the lock on the lease row that the
   * claim of the next term waits for, and (PostgreSQL) bounds the transaction's idle time.
   *
   * @return true if the database confirms this holder at this term
   */
  boolean verifyInTransaction(Connection connection, boolean strict, Duration idleInTransaction)
      throws SQLException {
    try {
      return verifyInTransaction(
          connection, manager.dialect().verifyText(strict), strict, idleInTransaction, null);
    } catch (SQLException e) {
      if (Dialect.isRefusal(e)) {
        return false; // the database refused it: this holder no longer holds the lease
      }
      throw e;
    }
  }

  /**
   * Runs {@code sql} (the dialect's {@link Dialect#verifySql}, or for negative controls its {@link
   * Dialect#clientCheckedVerifySql}) as the verify; the server's refusal is thrown as it came
   * ({@link Dialect#isRefusal} tells it). When the database confirms the holder and {@code
   * sessionBounds} is not null, also reports the session's current STRICT bounds the verify reads
   * along ({@link Dialect#readSessionBounds}: MySQL/MariaDB lock wait and idle-in-transaction
   * timeout in seconds, -1 where there is none; unchanged on other databases).
   *
   * @return true if the database confirms this holder at this term, false if it returned no row
   */
  boolean verifyInTransaction(
      Connection connection,
      String sql,
      boolean strict,
      Duration idleInTransaction,
      long[] sessionBounds)
      throws SQLException {
    Dialect d = manager.dialect();
    try (PreparedStatement ps = connection.prepareStatement(sql)) {
      d.bindVerify(ps, 1, name, holder, term, strict, idleInTransaction.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
        if (strict && sessionBounds != null) {
          d.readSessionBounds(rs, sessionBounds);
        }
        return true;
      }
    }
  }

  /**
   * Waits, at most {@code max}, while the keeper's renewal of this lease is in flight; returns at
   * once when none is. lease-jdbc calls it before a new fenced transaction on SQLite, whose busy
   * handler has no queue: without it, back-to-back writers under the lease can starve the renewal's
   * write (measured: a renewal failed within 2 s under 16 threads). InnoDB and PostgreSQL queue the
   * renewal themselves.
   */
  void awaitRenewal(Duration max) throws InterruptedException {
    if (!renewing) {
      return;
    }
    long deadline = System.nanoTime() + max.toNanos();
    synchronized (renewalGate) {
      long left;
      while (renewing && (left = deadline - System.nanoTime()) > 0) {
        renewalGate.wait(Math.max(1, left / 1_000_000));
      }
    }
  }

  // ---- package-private: the keeper's side -----------------------------------------------------

  void renewalStarted() {
    renewing = true;
  }

  /** A renewal of the keeper's batch is in flight for this lease. */
  boolean isRenewing() {
    return renewing;
  }

  void renewalEnded() {
    synchronized (renewalGate) {
      renewing = false;
      renewalGate.notifyAll();
    }
  }

  synchronized long lastRenewalStart() {
    return lastRenewalStart;
  }

  synchronized boolean held() {
    return state == State.HELD;
  }

  /** Records a renewal that started at {@code start} and succeeded; false if it came too late. */
  boolean renewed(long start) {
    synchronized (this) {
      if (state != State.HELD) {
        return false;
      }
      if (manager.clock().nanoTime() - lastRenewalStart >= localDeadlineNanos) {
        loseLocked(LossReason.LOCAL_DEADLINE);
      } else {
        if (start - lastRenewalStart > 0) {
          lastRenewalStart = start;
          lastRenewalStartVolatile = start;
        }
        return true;
      }
    }
    notifyLost();
    return false;
  }

  /** Declares the lease lost if its local deadline has passed; true if it is (now) lost. */
  boolean checkDeadline() {
    synchronized (this) {
      if (state == State.LOST) {
        return true;
      }
      if (state != State.HELD
          || manager.clock().nanoTime() - lastRenewalStart < localDeadlineNanos) {
        return false;
      }
      loseLocked(LossReason.LOCAL_DEADLINE);
    }
    notifyLost();
    return true;
  }

  /** For {@code LeaseManager.notHeld}: lost from the start, without events (nothing was held). */
  synchronized void markNotHeld() {
    loseLocked(LossReason.NOT_HELD);
    over.countDown();
  }

  void lose(LossReason reason) {
    synchronized (this) {
      if (state != State.HELD) {
        return;
      }
      loseLocked(reason);
    }
    notifyLost();
  }

  /**
   * Ends this lease with {@code end} instead of the release statement: the scheduler's finish,
   * which gives the name back as release does and records the round in the same statement (its work
   * has ended). Stops the keeper first. False, without running {@code end}, if the lease is no
   * longer held here (lost, released, or being released).
   */
  boolean endWith(BooleanSupplier end) {
    RenewalKeeper k;
    synchronized (this) {
      if (state != State.HELD || releasing) {
        return false;
      }
      state = State.RELEASED;
      ended = true;
      k = keeper;
    }
    if (k != null) {
      k.stop();
    }
    lossListeners.clear();
    manager.forget(this);
    over.countDown();
    boolean done = end.getAsBoolean();
    manager.safely(l -> l.released(this));
    return done;
  }

  // ---- package-private: work under the lease and the release protocol -------------------------

  /** Binds {@code work} to this lease; false if the lease is no longer held or being released. */
  synchronized boolean attach(BoundWork work) {
    if (state != State.HELD || releasing) {
      return false;
    }
    works.add(work);
    return true;
  }

  synchronized void detach(BoundWork work) {
    works.remove(work);
  }

  /**
   * The first step of a release: marks the lease as being released (no new work binds to it, no
   * second release starts) and returns the work to stop first, without the calling thread's own.
   * Null if the lease ended or another release is under way.
   */
  synchronized List<BoundWork> beginRelease() {
    if (state != State.HELD || releasing) {
      return null;
    }
    releasing = true;
    List<BoundWork> toStop = new ArrayList<>();
    for (BoundWork w : works) {
      if (w.thread != Thread.currentThread()) {
        toStop.add(w);
      }
    }
    return toStop;
  }

  /**
   * The second step: the lease is released here (keeper stopped, no longer tracked); the caller
   * then runs the release statement. False if it was lost in the meantime (not ours to release).
   */
  boolean completeRelease() {
    RenewalKeeper k;
    synchronized (this) {
      if (state != State.HELD) {
        return false;
      }
      state = State.RELEASED;
      ended = true;
      k = keeper;
    }
    if (k != null) {
      k.stop();
    }
    lossListeners.clear();
    manager.forget(this);
    over.countDown();
    return true;
  }

  /** Waits up to {@code nanos} for the lease to end (released or lost). */
  boolean awaitOver(long nanos) throws InterruptedException {
    return over.await(Math.max(0, nanos), TimeUnit.NANOSECONDS);
  }

  /** True the first time: the failure policy may run for this lease (at most once). */
  boolean claimPolicyRun() {
    return manager.rules().mayRunPolicy(policyRan);
  }

  /** Runs the {@link #onLoss} callbacks, each once, logging what they throw. */
  void runLossCallbacks() {
    for (Consumer<Lease> listener : lossListeners) {
      if (lossListeners.remove(listener)) {
        try {
          listener.accept(this);
        } catch (RuntimeException e) {
          log.warn("loss listener of lease {} failed", name, e);
        }
      }
    }
  }

  private void loseLocked(LossReason reason) {
    state = State.LOST;
    lossReason = reason;
    ended = true;
  }

  /**
   * After the state became LOST: stops the keeper, interrupts the bound work at once (cheap, never
   * blocks), and hands the rest (callbacks, listeners, grace period, failure policy, the release at
   * the local deadline) to the manager's loss handling, off this thread: it may be a keeper thread
   * or a thread of the application that asked {@link #isHeld()}.
   */
  private void notifyLost() {
    RenewalKeeper k;
    List<BoundWork> stopping;
    LossReason reason;
    synchronized (this) {
      k = keeper;
      stopping = new ArrayList<>(works);
      reason = lossReason;
    }
    if (k != null) {
      k.stop();
    }
    manager.forget(this);
    over.countDown();
    log.warn(
        "lost lease {} term {} instance {}: {}",
        name,
        term,
        instance,
        switch (reason) {
          case NOT_HELD -> "the database says it is no longer ours";
          case DATABASE -> "the database refused a fenced transaction: it is no longer ours";
          case LOCAL_DEADLINE ->
              "no renewal succeeded within the local deadline of "
                  + manager.timings().localDeadline().toMillis()
                  + " ms";
        });
    for (BoundWork w : stopping) {
      w.requestStop();
    }
    manager.releases().handleLoss(this, reason, stopping);
  }
}
