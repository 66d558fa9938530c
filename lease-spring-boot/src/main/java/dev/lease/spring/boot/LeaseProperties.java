package dev.lease.spring.boot;

import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.AutoCommitPolicy;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.ReadOnlyPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * The starter's configuration, under {@code lease.*}. Validated when bound: a value the lease
 * library would refuse (an inconsistent timing, a negative timeout) stops the application context
 * with a message that names the property. Timings left out derive from {@code lease.duration} in
 * the proportions of lease-core's defaults (15 s lease: renew every 2 s, attempt timeout 5 s, local
 * deadline 10 s, grace period 5 s), so {@code lease.duration=3s} alone is a consistent set.
 */
@ConfigurationProperties(prefix = "lease", ignoreUnknownFields = false)
public class LeaseProperties implements Validator {

  /** Whether the starter configures anything at all. */
  private boolean enabled = true;

  /** The lease table: a plain SQL identifier, optionally schema.table. */
  private String table = "leases";

  /** This replica's name in the lease rows, for humans; default host/pid. */
  private String instance;

  /**
   * Create the lease table at start if it is missing (else apply LeaseManager.ddl in migrations).
   */
  private boolean createTable = false;

  /**
   * How long the lease manager's start (connecting to the lease database, detecting it, checking or
   * creating the table) may take before start-up fails; a database that accepts connections but
   * never answers would otherwise hang it. Later lease statements are bounded by the attempt
   * timeout.
   */
  private Duration connectTimeout = Duration.ofSeconds(30);

  /** How long the database keeps a lease without renewal. */
  private Duration duration = Duration.ofSeconds(15);

  /** Renewal cadence; default duration x 2/15. */
  private Duration renewInterval;

  /** Bound of one claim or renewal attempt; default duration / 3. */
  private Duration attemptTimeout;

  /**
   * The holder gives a lease up this long after the start of its last successful renewal; default
   * duration x 2/3.
   */
  private Duration localDeadline;

  /** Time work has to stop after its lease was lost; default duration / 3. */
  private Duration gracePeriod;

  /** The largest relative rate error of this process's monotonic clock, in [0, 0.5). */
  private double maxClockRateError = 0.10;

  /** What to do when work under a lost lease does not stop within the grace period. */
  private FailurePolicyChoice failurePolicy = FailurePolicyChoice.HALT_PROCESS;

  private final Fencing fencing = new Fencing();
  private final Scheduler scheduler = new Scheduler();
  private final Metrics metrics = new Metrics();

  /** What lease-core's FailurePolicy does when lost work does not stop. */
  public enum FailurePolicyChoice {
    /** Log an error and halt the JVM with status 70 (lease-core's default). */
    HALT_PROCESS,
    /** Only log an error (the application handles stuck work itself). */
    LOG_ONLY
  }

  /** {@code lease.fencing.*}: wrapping the DataSource beans of the lease database. */
  public static class Fencing {
    /**
     * Wrap the DataSource bean of the lease database (the one the LeaseManager uses) in
     * lease-jdbc's FencedDataSource, so the transactions of a method running under a lease are
     * verified by the database.
     */
    private boolean enabled = false;

    /** STRICT (default; the next holder's claim waits for verified transactions) or VERIFY. */
    private FencingMode mode = FencingMode.STRICT;

    /** Statements in autocommit mode under a lease: VERIFIED_TRANSACTION, VERIFY_ONLY or REFUSE. */
    private AutoCommitPolicy autoCommit = AutoCommitPolicy.VERIFIED_TRANSACTION;

    /** Read-only transactions under a lease: VERIFY (default) or SKIP. */
    private ReadOnlyPolicy readOnly = ReadOnlyPolicy.VERIFY;

    /** STRICT: how long a verified transaction may sit idle; default the lease duration. */
    private Duration idleInTransactionTimeout;

    /** STRICT on MySQL/MariaDB: innodb_lock_wait_timeout of the session; default the duration. */
    private Duration lockWaitTimeout;

    /**
     * Names of further DataSource beans to wrap: each must reach the lease database (a second pool
     * on it), which is checked at start.
     */
    private List<String> dataSources = new ArrayList<>();

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public FencingMode getMode() {
      return mode;
    }

    public void setMode(FencingMode mode) {
      this.mode = mode;
    }

    public AutoCommitPolicy getAutoCommit() {
      return autoCommit;
    }

    public void setAutoCommit(AutoCommitPolicy autoCommit) {
      this.autoCommit = autoCommit;
    }

    public ReadOnlyPolicy getReadOnly() {
      return readOnly;
    }

    public void setReadOnly(ReadOnlyPolicy readOnly) {
      this.readOnly = readOnly;
    }

    public Duration getIdleInTransactionTimeout() {
      return idleInTransactionTimeout;
    }

    public void setIdleInTransactionTimeout(Duration idleInTransactionTimeout) {
      this.idleInTransactionTimeout = idleInTransactionTimeout;
    }

    public Duration getLockWaitTimeout() {
      return lockWaitTimeout;
    }

    public void setLockWaitTimeout(Duration lockWaitTimeout) {
      this.lockWaitTimeout = lockWaitTimeout;
    }

    public List<String> getDataSources() {
      return dataSources;
    }

    public void setDataSources(List<String> dataSources) {
      this.dataSources = dataSources;
    }

    /** The lease-jdbc options these properties describe. */
    FencingOptions toOptions() {
      FencingOptions.Builder b =
          FencingOptions.builder().mode(mode).autoCommit(autoCommit).readOnly(readOnly);
      if (idleInTransactionTimeout != null) {
        b.idleInTransactionTimeout(idleInTransactionTimeout);
      }
      if (lockWaitTimeout != null) {
        b.lockWaitTimeout(lockWaitTimeout);
      }
      return b.build();
    }
  }

  /** {@code lease.scheduler.*}: the LeaseScheduler that runs {@code @LeaseScheduled} methods. */
  public static class Scheduler {
    /** Whether @LeaseScheduled methods are run. */
    private boolean enabled = true;

    /** How often each replica reads its jobs' rows (one statement for all jobs). */
    private Duration pollInterval = Duration.ofSeconds(1);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getPollInterval() {
      return pollInterval;
    }

    public void setPollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
    }
  }

  /** {@code lease.metrics.*}: the Micrometer meters. */
  public static class Metrics {
    /** Whether lease meters are registered (when Micrometer is present). */
    private boolean enabled = true;

    /**
     * Tag meters with the lease (or job) name. Turn off for large or unbounded lease sets (names
     * computed from arguments): every meter then counts all leases together.
     */
    private boolean leaseTag = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public boolean isLeaseTag() {
      return leaseTag;
    }

    public void setLeaseTag(boolean leaseTag) {
      this.leaseTag = leaseTag;
    }
  }

  /**
   * The timings these properties describe; timings left out derive from {@link #getDuration()}.
   *
   * @throws IllegalArgumentException naming the broken relation in lease-core's words
   */
  LeaseTimings toTimings() {
    // lease-core's derivation, so the starter, the agent and LeaseTimings.of agree
    LeaseTimings.Builder b = LeaseTimings.builderFor(duration).maxClockRateError(maxClockRateError);
    if (renewInterval != null) {
      b.renewInterval(renewInterval);
    }
    if (attemptTimeout != null) {
      b.attemptTimeout(attemptTimeout);
    }
    if (localDeadline != null) {
      b.localDeadline(localDeadline);
    }
    if (gracePeriod != null) {
      b.gracePeriod(gracePeriod);
    }
    return b.build();
  }

  // ---- validation (Spring Boot applies it when it binds, because this class is a Validator) -----

  /** lease-core's names of the timings and the properties they come from. */
  private static final Map<String, String> TIMING_FIELDS =
      Map.of(
          "leaseDuration", "duration",
          "renewInterval", "renewInterval",
          "attemptTimeout", "attemptTimeout",
          "localDeadline", "localDeadline",
          "gracePeriod", "gracePeriod",
          "maxClockRateError", "maxClockRateError");

  private static final Map<String, String> PROPERTY_NAMES =
      Map.of(
          "leaseDuration", "lease.duration",
          "renewInterval", "lease.renew-interval",
          "attemptTimeout", "lease.attempt-timeout",
          "localDeadline", "lease.local-deadline",
          "gracePeriod", "lease.grace-period",
          "maxClockRateError", "lease.max-clock-rate-error");

  @Override
  public boolean supports(Class<?> clazz) {
    return LeaseProperties.class.isAssignableFrom(clazz);
  }

  @Override
  public void validate(Object target, Errors errors) {
    LeaseProperties p = (LeaseProperties) target;
    try {
      p.toTimings();
    } catch (IllegalArgumentException e) {
      String message = e.getMessage();
      // the first lease-core name in the message is the property to blame
      String field = "duration";
      int first = Integer.MAX_VALUE;
      for (Map.Entry<String, String> f : TIMING_FIELDS.entrySet()) {
        int at = message.indexOf(f.getKey());
        if (at >= 0 && at < first) {
          first = at;
          field = f.getValue();
        }
      }
      for (Map.Entry<String, String> n : PROPERTY_NAMES.entrySet()) {
        message = message.replace(n.getKey(), n.getValue());
      }
      errors.rejectValue(field, "lease.timings", message);
    } catch (NullPointerException e) {
      errors.rejectValue("duration", "lease.timings", "lease.duration must be set");
    }
    try {
      p.getFencing().toOptions();
    } catch (IllegalArgumentException e) {
      String field =
          e.getMessage().startsWith("lockWaitTimeout")
              ? "fencing.lockWaitTimeout"
              : "fencing.idleInTransactionTimeout";
      errors.rejectValue(
          field,
          "lease.fencing",
          e.getMessage()
              .replace("idleInTransactionTimeout", "lease.fencing.idle-in-transaction-timeout")
              .replace("lockWaitTimeout", "lease.fencing.lock-wait-timeout"));
    }
    if (p.getConnectTimeout() == null || p.getConnectTimeout().toMillis() < 1) {
      errors.rejectValue(
          "connectTimeout",
          "lease.connect-timeout",
          "lease.connect-timeout must be at least 1 ms, got " + p.getConnectTimeout());
    }
    if (p.getScheduler().getPollInterval() == null
        || p.getScheduler().getPollInterval().toMillis() < 1) {
      errors.rejectValue(
          "scheduler.pollInterval",
          "lease.scheduler",
          "lease.scheduler.poll-interval must be at least 1 ms, got "
              + p.getScheduler().getPollInterval());
    }
  }

  // ---- getters and setters
  // ------------------------------------------------------------------------

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public String getTable() {
    return table;
  }

  public void setTable(String table) {
    this.table = table;
  }

  public String getInstance() {
    return instance;
  }

  public void setInstance(String instance) {
    this.instance = instance;
  }

  public boolean isCreateTable() {
    return createTable;
  }

  public void setCreateTable(boolean createTable) {
    this.createTable = createTable;
  }

  public Duration getConnectTimeout() {
    return connectTimeout;
  }

  public void setConnectTimeout(Duration connectTimeout) {
    this.connectTimeout = connectTimeout;
  }

  public Duration getDuration() {
    return duration;
  }

  public void setDuration(Duration duration) {
    this.duration = duration;
  }

  public Duration getRenewInterval() {
    return renewInterval;
  }

  public void setRenewInterval(Duration renewInterval) {
    this.renewInterval = renewInterval;
  }

  public Duration getAttemptTimeout() {
    return attemptTimeout;
  }

  public void setAttemptTimeout(Duration attemptTimeout) {
    this.attemptTimeout = attemptTimeout;
  }

  public Duration getLocalDeadline() {
    return localDeadline;
  }

  public void setLocalDeadline(Duration localDeadline) {
    this.localDeadline = localDeadline;
  }

  public Duration getGracePeriod() {
    return gracePeriod;
  }

  public void setGracePeriod(Duration gracePeriod) {
    this.gracePeriod = gracePeriod;
  }

  public double getMaxClockRateError() {
    return maxClockRateError;
  }

  public void setMaxClockRateError(double maxClockRateError) {
    this.maxClockRateError = maxClockRateError;
  }

  public FailurePolicyChoice getFailurePolicy() {
    return failurePolicy;
  }

  public void setFailurePolicy(FailurePolicyChoice failurePolicy) {
    this.failurePolicy = failurePolicy;
  }

  public Fencing getFencing() {
    return fencing;
  }

  public Scheduler getScheduler() {
    return scheduler;
  }

  public Metrics getMetrics() {
    return metrics;
  }
}
