package dev.lease.jdbc;

import dev.lease.core.LeaseListener;
import dev.lease.jdbc.internal.FenceRules;
import dev.lease.jdbc.internal.RulesAccess;
import java.time.Duration;
import java.util.Objects;
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

  static {
    // the guarded entry of the negative controls' weakened rules (FenceInternals.rulesForTesting)
    RulesAccess.register(Builder.class, (b, rules, warn) -> b.rules(rules, warn));
  }

  private static final FencingOptions DEFAULTS = builder().build();

  private final FencingMode mode;
  private final AutoCommitPolicy autoCommit;
  private final OutsideTransactionPolicy outsideTransaction;
  private final OutsideTransactionPolicy outsideTransactionSet; // null: by the mode
  private final ReadOnlyPolicy readOnly;
  private final LeaseListener listener;
  private final Duration idleInTransactionTimeout;
  private final Duration lockWaitTimeout;
  private final FenceRules rules;
  private final boolean weakened;
  private final Executor cancelExecutor;
  private final boolean piggybackVerify;

  private FencingOptions(Builder b) {
    this.mode = b.mode;
    this.autoCommit = b.autoCommit;
    this.outsideTransactionSet = b.outsideTransaction;
    this.outsideTransaction =
        b.outsideTransaction != null
            ? b.outsideTransaction
            : b.mode == FencingMode.STRICT
                ? OutsideTransactionPolicy.REFUSE
                : OutsideTransactionPolicy.VERIFY_FIRST;
    this.readOnly = b.readOnly;
    this.listener = b.listener;
    this.idleInTransactionTimeout = b.idleInTransactionTimeout;
    this.lockWaitTimeout = b.lockWaitTimeout;
    this.rules = b.rules;
    this.weakened = b.weakened;
    this.cancelExecutor = b.cancelExecutor;
    this.piggybackVerify = b.piggybackVerify;
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
    b.outsideTransaction = outsideTransactionSet;
    b.readOnly = readOnly;
    b.listener = listener;
    b.idleInTransactionTimeout = idleInTransactionTimeout;
    b.lockWaitTimeout = lockWaitTimeout;
    b.rules = rules;
    b.weakened = weakened;
    b.cancelExecutor = cancelExecutor;
    b.piggybackVerify = piggybackVerify;
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

  /**
   * What a statement that cannot run inside a verified transaction does under a lease ({@link
   * OutsideTransactionPolicy}); unless set, {@code REFUSE} in STRICT mode and {@code VERIFY_FIRST}
   * in VERIFY mode.
   */
  public OutsideTransactionPolicy outsideTransaction() {
    return outsideTransaction;
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

  /**
   * The rules of the fence's mechanisms, which are not API: {@link FenceRules#PRODUCTION}, or a
   * negative control's weakened ones (test sources only, through {@code
   * FenceInternals.rulesForTesting}); with whether its connections warn that they are weakened and
   * the executor of its cancels (null: the fence's shared threads). {@link FencedConnections}
   * builds the fence from them.
   */
  FenceRules rules() {
    return rules;
  }

  boolean weakened() {
    return weakened;
  }

  Executor cancelExecutor() {
    return cancelExecutor;
  }

  @Override
  public String toString() {
    return "FencingOptions[mode="
        + mode
        + ", autoCommit="
        + autoCommit
        + ", outsideTransaction="
        + outsideTransaction
        + ", readOnly="
        + readOnly
        + ", idleInTransactionTimeout="
        + idleInTransactionTimeout
        + ", lockWaitTimeout="
        + lockWaitTimeout
        + ", piggybackVerify="
        + piggybackVerify
        + (rules == FenceRules.PRODUCTION ? "" : (weakened ? ", WEAKENED=" : ", RULES=") + rules)
        + "]";
  }

  /** Builds {@link FencingOptions}. */
  public static final class Builder {
    private FencingMode mode = FencingMode.STRICT;
    private AutoCommitPolicy autoCommit = AutoCommitPolicy.VERIFIED_TRANSACTION;
    private OutsideTransactionPolicy outsideTransaction; // null: by the mode
    private ReadOnlyPolicy readOnly = ReadOnlyPolicy.VERIFY;
    private LeaseListener listener;
    private Duration idleInTransactionTimeout;
    private Duration lockWaitTimeout;
    private FenceRules rules = FenceRules.PRODUCTION;
    private boolean weakened;
    private Executor cancelExecutor; // null: the fence's shared cancel threads
    private boolean piggybackVerify = true;

    private Builder() {}

    public Builder mode(FencingMode mode) {
      this.mode = Objects.requireNonNull(mode, "mode");
      return this;
    }

    public Builder autoCommit(AutoCommitPolicy policy) {
      this.autoCommit = Objects.requireNonNull(policy, "autoCommit");
      return this;
    }

    /**
     * What a statement that cannot run inside a verified transaction does under a lease (MySQL's
     * implicit commits and routines, PostgreSQL's VACUUM and CONCURRENTLY, SQLite's VACUUM): see
     * {@link OutsideTransactionPolicy}. Default: {@code REFUSE} in STRICT mode, {@code
     * VERIFY_FIRST} in VERIFY mode.
     */
    public Builder outsideTransaction(OutsideTransactionPolicy policy) {
      this.outsideTransaction = Objects.requireNonNull(policy, "outsideTransaction");
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

    /**
     * Other rules of the fence's mechanisms, for negative controls and comparisons only: {@code
     * warn} (set by {@code FenceInternals.rulesForTesting}, the one entry of the tests) makes every
     * fenced connection log at ERROR that its fence is weakened.
     */
    Builder rules(FenceRules rules, boolean warn) {
      this.rules = Objects.requireNonNull(rules, "rules");
      this.weakened = warn && rules != FenceRules.PRODUCTION;
      return this;
    }

    /** Tests: runs the cancels of lost leases' statements (default: the fence's cancel threads). */
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
