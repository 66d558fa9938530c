package dev.lease.jdbc;

import dev.lease.core.LeaseListener;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executor;

/**
 * How fenced connections verify transactions; immutable. {@link #defaults()}: {@link
 * FencingMode#STRICT}, autocommit statements as their own verified transactions, read-only
 * transactions verified, session timeouts of one lease duration.
 *
 * <pre>{@code
 * FencingOptions options = FencingOptions.builder()
 *     .mode(FencingMode.STRICT)
 *     .autoCommit(AutoCommitPolicy.VERIFIED_TRANSACTION)
 *     .readOnly(ReadOnlyPolicy.VERIFY)
 *     .idleInTransactionTimeout(Duration.ofSeconds(5))
 *     .build();
 * }</pre>
 */
public final class FencingOptions {

  private static final FencingOptions DEFAULTS = builder().build();

  private final FencingMode mode;
  private final AutoCommitPolicy autoCommit;
  private final ReadOnlyPolicy readOnly;
  private final LeaseListener listener;
  private final Duration idleInTransactionTimeout;
  private final Duration lockWaitTimeout;
  private final Set<Weakening> weakenings;
  private final Executor cancelExecutor;
  private final boolean piggybackVerify;
  private final Refusal refusal;
  private final Reading reading;
  private final DriverSessions sessions;
  private final LockDoubt lockDoubt;

  private FencingOptions(Builder b) {
    this.mode = b.mode;
    this.autoCommit = b.autoCommit;
    this.readOnly = b.readOnly;
    this.listener = b.listener;
    this.idleInTransactionTimeout = b.idleInTransactionTimeout;
    this.lockWaitTimeout = b.lockWaitTimeout;
    Set<Weakening> w = EnumSet.noneOf(Weakening.class);
    w.addAll(b.weakenings);
    w.addAll(Weakening.fromSystemProperty());
    this.weakenings = w;
    this.cancelExecutor = b.cancelExecutor;
    this.piggybackVerify = b.piggybackVerify;
    // negative controls: the weakenings (the builder's or the system property's) choose the weaker
    // strategies here, and nowhere else
    this.refusal = w.contains(Weakening.PREVIOUS_REFUSAL) ? Refusal.CLIENT : b.refusal;
    this.reading =
        w.contains(Weakening.LEADING_KEYWORD)
            ? Reading.LEADING_KEYWORD
            : w.contains(Weakening.UNKNOWN_IMPLICIT_COMMITS)
                ? Reading.UNKNOWN_IMPLICIT_COMMITS
                : b.reading;
    this.sessions = w.contains(Weakening.NO_DRIVER_SESSION) ? DriverSessions.IGNORED : b.sessions;
    this.lockDoubt = w.contains(Weakening.NO_REVERIFY) ? LockDoubt.TRUST_THE_LOCK : b.lockDoubt;
  }

  public static FencingOptions defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder that starts from these options. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.mode = mode;
    b.autoCommit = autoCommit;
    b.readOnly = readOnly;
    b.listener = listener;
    b.idleInTransactionTimeout = idleInTransactionTimeout;
    b.lockWaitTimeout = lockWaitTimeout;
    b.weakenings.addAll(weakenings);
    b.cancelExecutor = cancelExecutor;
    b.piggybackVerify = piggybackVerify;
    b.refusal = refusal;
    b.reading = reading;
    b.sessions = sessions;
    b.lockDoubt = lockDoubt;
    return b;
  }

  public FencingMode mode() {
    return mode;
  }

  public AutoCommitPolicy autoCommit() {
    return autoCommit;
  }

  public ReadOnlyPolicy readOnly() {
    return readOnly;
  }

  /** The listener told of verified, refused and poisoned transactions, or null. */
  public LeaseListener listener() {
    return listener;
  }

  /** The idle-in-transaction bound of STRICT mode, or null for the lease's duration. */
  public Duration idleInTransactionTimeout() {
    return idleInTransactionTimeout;
  }

  /** The lock-wait bound of STRICT mode on MySQL/MariaDB, or null for the lease's duration. */
  public Duration lockWaitTimeout() {
    return lockWaitTimeout;
  }

  /**
   * Whether the verify of a transaction's first statement travels in the same round trip as the
   * statement where the driver allows it (PostgreSQL; MySQL and MariaDB with {@code
   * allowMultiQueries=true}; see {@link Builder#piggybackVerify}).
   */
  public boolean piggybackVerify() {
    return piggybackVerify;
  }

  /** Negative controls only (see {@link Weakening}). */
  boolean weakened(Weakening w) {
    return !weakenings.isEmpty() && weakenings.contains(w);
  }

  Set<Weakening> weakenings() {
    return weakenings;
  }

  /** How a lease no longer held stops a transaction ({@link Refusal#SERVER} but in tests). */
  Refusal refusal() {
    return refusal;
  }

  /** How a statement's text is read ({@link Reading#EVERY_STATEMENT} but in tests). */
  Reading reading() {
    return reading;
  }

  /** How the driver's view of the session is found ({@link DriverSessions#ASKED} but in tests). */
  DriverSessions sessions() {
    return sessions;
  }

  /** What a doubt about the verify's lock does ({@link LockDoubt#VERIFY_AGAIN} but in tests). */
  LockDoubt lockDoubt() {
    return lockDoubt;
  }

  /** Where a lost lease's running statement is cancelled: off the thread that reported the loss. */
  Executor cancelExecutor() {
    return cancelExecutor;
  }

  @Override
  public String toString() {
    return "FencingOptions[mode="
        + mode
        + ", autoCommit="
        + autoCommit
        + ", readOnly="
        + readOnly
        + ", idleInTransactionTimeout="
        + idleInTransactionTimeout
        + ", lockWaitTimeout="
        + lockWaitTimeout
        + ", piggybackVerify="
        + piggybackVerify
        + (weakenings.isEmpty() ? "" : ", WEAKENED=" + weakenings)
        + (refusal == Refusal.SERVER ? "" : ", REFUSAL=" + refusal)
        + (reading == Reading.EVERY_STATEMENT ? "" : ", READING=" + reading)
        + (sessions == DriverSessions.ASKED ? "" : ", DRIVER_SESSIONS=" + sessions)
        + (lockDoubt == LockDoubt.VERIFY_AGAIN ? "" : ", LOCK_DOUBT=" + lockDoubt)
        + "]";
  }

  /** Builds {@link FencingOptions}. */
  public static final class Builder {
    private FencingMode mode = FencingMode.STRICT;
    private AutoCommitPolicy autoCommit = AutoCommitPolicy.VERIFIED_TRANSACTION;
    private ReadOnlyPolicy readOnly = ReadOnlyPolicy.VERIFY;
    private LeaseListener listener;
    private Duration idleInTransactionTimeout;
    private Duration lockWaitTimeout;
    private final Set<Weakening> weakenings = EnumSet.noneOf(Weakening.class);
    private Executor cancelExecutor = CancelThreads.SHARED;
    private boolean piggybackVerify = true;
    private Refusal refusal = Refusal.SERVER;
    private Reading reading = Reading.EVERY_STATEMENT;
    private DriverSessions sessions = DriverSessions.ASKED;
    private LockDoubt lockDoubt = LockDoubt.VERIFY_AGAIN;

    private Builder() {}

    public Builder mode(FencingMode mode) {
      this.mode = Objects.requireNonNull(mode, "mode");
      return this;
    }

    public Builder autoCommit(AutoCommitPolicy policy) {
      this.autoCommit = Objects.requireNonNull(policy, "autoCommit");
      return this;
    }

    public Builder readOnly(ReadOnlyPolicy policy) {
      this.readOnly = Objects.requireNonNull(policy, "readOnly");
      return this;
    }

    /**
     * Also tells {@code listener} of verified, refused and poisoned transactions (the lease
     * manager's own listeners are always told).
     */
    public Builder listener(LeaseListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * STRICT: how long a transaction may sit idle between statements after its verify before the
     * database ends the session (PostgreSQL {@code idle_in_transaction_session_timeout}, set for
     * the transaction only; MariaDB {@code idle_transaction_timeout}, set for the session, whole
     * seconds). It bounds how long a paused holder can delay the next holder's claim beyond the
     * lease's expiry. Default: the lease's duration. MySQL has no such setting; SQLite has no
     * server.
     */
    public Builder idleInTransactionTimeout(Duration timeout) {
      this.idleInTransactionTimeout = positive("idleInTransactionTimeout", timeout);
      return this;
    }

    /**
     * STRICT on MySQL/MariaDB: {@code innodb_lock_wait_timeout} of the session (whole seconds),
     * which bounds how long the verify waits behind a claim. Default: the lease's duration.
     */
    public Builder lockWaitTimeout(Duration timeout) {
      this.lockWaitTimeout = positive("lockWaitTimeout", timeout);
      return this;
    }

    /**
     * Sends the verify of a transaction's first statement in the same round trip as the statement
     * (default true), inside a transaction begun with {@code setAutoCommit(false)}, on PostgreSQL
     * and on MySQL/MariaDB when the user's driver was configured with {@code
     * allowMultiQueries=true} (MySQL Connector/J, MariaDB Connector/J; read from the driver, never
     * changed): the driver sends {@code <verify>; <statement>} as one text, the verify runs first
     * on the server and takes its lock before the statement does, a verify that finds the lease
     * gone fails there and the server runs nothing after it, and the wrapper reads the verify's row
     * before presenting the statement's results. It saves one round trip per transaction.
     * Statements it cannot carry (autocommit statements, batches, callable statements, generated
     * keys, a fetch size, read-only transactions, stream parameters; on MySQL/MariaDB also a query
     * timeout, a row limit, server-side prepares and calls of the wrong kind) and other databases
     * verify as a statement of their own. False: always the separate verify.
     */
    public Builder piggybackVerify(boolean piggyback) {
      this.piggybackVerify = piggyback;
      return this;
    }

    /** Negative controls only: switches mechanisms of the fence off (see {@link Weakening}). */
    Builder weaken(Weakening... ws) {
      for (Weakening w : ws) {
        weakenings.add(w);
      }
      return this;
    }

    /** Negative controls only: plugs in another refusal mechanism (see {@link Refusal}). */
    Builder refusal(Refusal refusal) {
      this.refusal = Objects.requireNonNull(refusal, "refusal");
      return this;
    }

    /** Negative controls only: plugs in another reading of the text (see {@link Reading}). */
    Builder reading(Reading reading) {
      this.reading = Objects.requireNonNull(reading, "reading");
      return this;
    }

    /** Negative controls only: plugs in another view of the driver's session. */
    Builder sessions(DriverSessions sessions) {
      this.sessions = Objects.requireNonNull(sessions, "sessions");
      return this;
    }

    /** Negative controls only: plugs in another answer to a doubt about the verify's lock. */
    Builder lockDoubt(LockDoubt lockDoubt) {
      this.lockDoubt = Objects.requireNonNull(lockDoubt, "lockDoubt");
      return this;
    }

    /** Tests: runs the cancels of lost leases' statements (default: {@link CancelThreads}). */
    Builder cancelExecutor(Executor executor) {
      this.cancelExecutor = Objects.requireNonNull(executor, "executor");
      return this;
    }

    public FencingOptions build() {
      return new FencingOptions(this);
    }

    private static Duration positive(String what, Duration d) {
      Objects.requireNonNull(d, what);
      if (d.isZero() || d.isNegative() || d.toMillis() > Integer.MAX_VALUE) {
        throw new IllegalArgumentException(
            what
                + " must be between 1 ms and "
                + Integer.MAX_VALUE
                + " ms, got "
                + d.toMillis()
                + " ms");
      }
      return d;
    }
  }
}
