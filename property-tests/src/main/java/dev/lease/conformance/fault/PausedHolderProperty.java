package dev.lease.conformance.fault;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.PropertyResult.Count;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * The takeover that fencing exists for, forced deterministically with latches: a holder verifies
 * its lease in a fenced transaction, then stalls (before or after its first write) past its lease,
 * while another process tries to claim; then it writes the rest and commits. The holder has no
 * keeper, as in a stop-the-world pause, so nothing in it gives the lease up before the commit.
 *
 * <p>With STRICT fencing, on PostgreSQL and MariaDB the server ends the stalled session (idle
 * timeout), the claim completes while the holder's transaction is still open, and the holder's
 * commit fails; on SQLite (and MySQL, which has no idle timeout) the claim waits for the open
 * transaction's lock: the holder resumes once a claim attempt has waited past the lease's expiry,
 * and commits before the claim. Each round counts as a test only if that event happened: every
 * round must be taken over across the open transaction, or have its claim wait for it.
 *
 * <p>{@link Fence#VERIFY} and {@link Fence#NONE} are the negative controls: VERIFY takes no lock,
 * so on the servers the stale commit lands after the claim; NONE does not verify at all, which
 * breaks SQLite too.
 */
public final class PausedHolderProperty implements ConformanceProperty {

  static final String NAME = "paused-job";
  static final int ROWS = 2;

  static final LeaseTimings TIMINGS =
      LeaseTimings.builder()
          .leaseDuration(Duration.ofMillis(1000))
          .renewInterval(Duration.ofMillis(200))
          .attemptTimeout(Duration.ofMillis(400))
          .localDeadline(Duration.ofMillis(600))
          .gracePeriod(Duration.ofMillis(200))
          .build();

  /** How long after the lease's expiry an attempt must still be waiting to count (a margin). */
  static final long SLACK_NANOS = 100_000_000L;

  private final Fence fence;

  public PausedHolderProperty() {
    this(Fence.STRICT);
  }

  public PausedHolderProperty(Fence fence) {
    this.fence = fence;
  }

  @Override
  public String id() {
    return fence == Fence.STRICT
        ? "paused-holder"
        : "paused-holder/" + (fence == Fence.NONE ? "unfenced" : "verify");
  }

  @Override
  public String headline() {
    return "A holder paused inside its fenced transaction past its lease cannot commit after its successor's claim.";
  }

  @Override
  public String summary() {
    return "A holder paused inside its STRICT-fenced transaction past its lease, while another"
        + " process claims, cannot commit under its old term after that claim (invariant 3).";
  }

  @Override
  public String countsAsATest() {
    return "every round taken over while the paused holder's verified transaction was open"
        + " (PostgreSQL, MariaDB), or with a claim that waited for it past the lease's expiry"
        + " (SQLite, MySQL)";
  }

  @Override
  public List<NegativeControl> controls() {
    return List.of(
        new NegativeControl(
            "paused-holder/verify",
            "VERIFY mode instead of STRICT (no lock)",
            new PausedHolderProperty(Fence.VERIFY),
            t ->
                t.isSqlite()
                    ? "on SQLite VERIFY is not broken by a pause: the verify's read snapshot makes a"
                        + " stale holder's write fail (SQLITE_BUSY_SNAPSHOT)"
                    : null),
        NegativeControl.of(
            "paused-holder/unfenced",
            "no fence: the holder's transactions do not verify",
            new PausedHolderProperty(Fence.NONE)));
  }

  @Override
  public PropertyResult check(Target target, Size size, long seed, Progress progress) {
    long started = System.nanoTime();
    String leases = target.newTable("leases");
    String business = target.newTable("business");
    History history = new History();
    int rounds = size.pick(2, 6);
    List<String> outcomes = new ArrayList<>();
    try {
      String product;
      try (LeaseManager setup =
          LeaseManager.builder(target.dataSource())
              .table(leases)
              .instance("setup")
              .createTableIfMissing()
              .build()) {
        product = setup.databaseProduct();
      }
      boolean waits = target.isSqlite() || product.equals("MySQL");
      BusinessTable.create(target, business);
      try (LeaseManager holderSide = manager(target, leases, "paused-holder");
          LeaseManager claimerSide = manager(target, leases, "claimer")) {
        for (int round = 0; round < rounds; round++) {
          // alternate: stall right after the verify, or after the first write
          outcomes.add(
              round(
                  target,
                  holderSide,
                  claimerSide,
                  business,
                  leases,
                  history,
                  round % 2 == 0,
                  round,
                  waits));
          progress.update(round + 1, round + 1);
        }
      }
      List<History.Violation> violations =
          history.check(ROWS, BusinessTable.rows(target, business));
      History.Events e = history.events(TIMINGS.leaseDuration().toNanos(), SLACK_NANOS);
      List<Count> counts = new ArrayList<>();
      if (waits) {
        counts.add(
            new Count(
                "rounds whose claim waited for the paused verified transaction past the lease",
                e.claimsThatWaited(),
                rounds));
      } else {
        counts.add(
            new Count(
                "rounds taken over while the paused verified transaction was open",
                e.takeoversAcrossOpenTransactions(),
                rounds));
      }
      History.byBranch(violations)
          .forEach(
              (b, n) -> {
                if (n > 0) {
                  counts.add(Count.info("violations of " + b.name(), n));
                }
              });
      String failure = null;
      if (!violations.isEmpty()) {
        StringBuilder b =
            new StringBuilder(
                "schedule: holder verifies ("
                    + fence
                    + "), stalls past its lease while another process claims, then writes and"
                    + " commits\n");
        violations.forEach(v -> b.append("    ").append(v).append('\n'));
        failure = b.toString();
      }
      return new PropertyResult(
          id(),
          target.label(),
          rounds,
          rounds,
          counts,
          violations.size(),
          failure,
          "how each round's paused holder ended its transaction (COMMITTED is allowed only"
              + " before the successor's claim, which STRICT makes wait for it; FAILED: nothing of"
              + " it committed): "
              + String.join("; ", outcomes),
          (System.nanoTime() - started) / 1_000_000);
    } catch (SQLException e) {
      throw new IllegalStateException(
          id() + " on " + target.label() + " could not be set up: " + e.getMessage(), e);
    } finally {
      target.dropQuietly(leases, business);
    }
  }

  private static LeaseManager manager(Target target, String table, String instance) {
    return LeaseManager.builder(target.dataSource())
        .table(table)
        .instance(instance)
        .timings(TIMINGS)
        .failurePolicy(FailurePolicy.logOnly())
        .build();
  }

  private String round(
      Target target,
      LeaseManager holderSide,
      LeaseManager claimerSide,
      String business,
      String leases,
      History history,
      boolean stallBeforeWrite,
      int round,
      boolean waits)
      throws SQLException {
    Lease lease = claimUntil(holderSide, System.nanoTime() + 10_000_000_000L);
    if (lease == null) {
      return "round " + round + ": the holder could not claim";
    }
    history.claimed(
        new History.Claim(lease.term(), lease.holder(), lease.instance(), System.nanoTime(), -1));
    DataSource connections = fence.wrap(target.dataSource(), TIMINGS.leaseDuration());
    long pauseNanos = 3 * TIMINGS.leaseDuration().toNanos();
    CountDownLatch resume = new CountDownLatch(1);
    long[] pauseStart = {Long.MAX_VALUE};
    Lease[] next = new Lease[1];
    Thread claimer =
        new Thread(
            () -> {
              long deadline = System.nanoTime() + pauseNanos + 5_000_000_000L;
              while (System.nanoTime() - deadline < 0 && next[0] == null) {
                long attempt = System.nanoTime();
                try {
                  Optional<Lease> l = claimerSide.tryClaim(NAME);
                  if (l.isPresent()) {
                    long completed = System.nanoTime();
                    long dbMs = -1;
                    try {
                      dbMs = claimerSide.databaseTimeMillis();
                    } catch (LeaseException e) {
                      // unknown; the real-time check still applies
                    }
                    history.claimed(
                        new History.Claim(
                            l.get().term(), l.get().holder(), l.get().instance(), completed, dbMs));
                    next[0] = l.get();
                    resume.countDown();
                    return;
                  }
                } catch (LeaseException e) {
                  long end = System.nanoTime();
                  if (BusinessTable.isLockWait(e)) {
                    history.waited(new History.Attempt("claimer", attempt, end));
                    // where the claim waits for the open transaction, one that waited past the
                    // lease's expiry is the event: the holder may resume
                    long expired;
                    synchronized (pauseStart) {
                      expired = pauseStart[0] + TIMINGS.leaseDuration().toNanos() + SLACK_NANOS;
                    }
                    if (waits && end - expired > 0) {
                      resume.countDown();
                    }
                  }
                }
                LockSupport.parkNanos(50_000_000L);
              }
            },
            "paused-holder-claimer");
    claimer.setDaemon(true);
    long txn = round + 1;
    long start = System.nanoTime();
    long verified = 0;
    long invoked = 0;
    long preCommitMs = -1;
    History.End end;
    String error = null;
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = connections.getConnection()) {
      try {
        c.setAutoCommit(false);
        BusinessTable.sessionId(c, target); // the fence verifies here
        verified = System.nanoTime();
        if (!stallBeforeWrite) {
          BusinessTable.insert(c, business, txn, 1, lease.term());
        }
        long stalled = System.nanoTime();
        synchronized (pauseStart) {
          pauseStart[0] = stalled;
        }
        claimer.start();
        // the pause: until the next holder has claimed (or, where the claim waits, until it waited
        // past the lease), at most three lease durations
        resume.await(pauseNanos, TimeUnit.NANOSECONDS);
        history.paused(new History.Pause(lease.instance(), txn, stalled, System.nanoTime()));
        if (stallBeforeWrite) {
          BusinessTable.insert(c, business, txn, 1, lease.term());
        }
        BusinessTable.insert(c, business, txn, 2, lease.term());
        preCommitMs = BusinessTable.observedTermAndTime(c, target, leases, NAME)[1];
        invoked = System.nanoTime();
        c.commit();
        end = History.End.COMMITTED;
      } catch (SQLException e) {
        try {
          c.rollback();
        } catch (SQLException r) {
          // the session may be gone
        }
        throw e;
      }
    } catch (SQLException | RuntimeException e) {
      end = invoked == 0 ? History.End.FAILED : History.End.UNKNOWN;
      error = e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    } finally {
      if (claimer.getState() == Thread.State.NEW) {
        claimer.start();
      }
    }
    try {
      claimer.join(pauseNanos / 1_000_000 + 15_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    history.ended(
        new History.Transaction(
            txn,
            lease.term(),
            lease.holder(),
            lease.instance(),
            start,
            verified,
            invoked,
            System.nanoTime(),
            end,
            -1,
            preCommitMs,
            error));
    if (next[0] != null) {
      try {
        next[0].release();
      } catch (LeaseException e) {
        // expires by itself
      }
    }
    return "round "
        + round
        + " ("
        + (stallBeforeWrite ? "paused before its first write" : "paused after its first write")
        + ") "
        + end
        + (next[0] != null ? ", successor's term " + next[0].term() : ", no successor claimed")
        + (error != null ? " (" + abbreviate(error) + ")" : "");
  }

  private static String abbreviate(String s) {
    String line = s == null ? "" : s.lines().findFirst().orElse("");
    return line.length() > 120 ? line.substring(0, 120) + "…" : line;
  }

  /** Polls for the lease until {@code deadlineNanos}, as a standby process does. */
  private static Lease claimUntil(LeaseManager manager, long deadlineNanos) {
    while (System.nanoTime() - deadlineNanos < 0) {
      try {
        Optional<Lease> l = manager.tryClaim(NAME);
        if (l.isPresent()) {
          return l.get();
        }
      } catch (LeaseException e) {
        // a lock wait behind the previous round's transaction timed out: try again
      }
      LockSupport.parkNanos(50_000_000L);
    }
    return null;
  }
}
