package dev.lease.conformance.fault;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
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
 * The takeover that fencing exists for, forced deterministically with a latch: a holder verifies
 * its lease in a fenced transaction, then stalls (before or after its first write) until another
 * process has claimed the expired lease, or until three lease durations passed; then it writes the
 * rest and commits. With STRICT fencing the claim cannot complete while the verified transaction is
 * open, or the database ends the stalled session first, so nothing commits under the old term after
 * the claim.
 *
 * <p>{@link Fence#VERIFY} and {@link Fence#NONE} are the negative controls: VERIFY takes no lock,
 * so on PostgreSQL, MySQL and MariaDB the stale commit lands after the claim and the checker must
 * report it; NONE does not verify at all, which breaks SQLite too. The holder has no keeper on
 * purpose: a real stop-the-world pause stops the keeper as well, so nothing marks the lease lost
 * before the commit.
 */
public final class PausedHolderProperty implements ConformanceProperty {

  /** How the holder's transaction is fenced. */
  public enum Fence {
    STRICT,
    VERIFY,
    NONE
  }

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

  private final Fence fence;

  public PausedHolderProperty() {
    this(Fence.STRICT);
  }

  public PausedHolderProperty(Fence fence) {
    this.fence = fence;
  }

  @Override
  public String id() {
    return fence == Fence.STRICT ? "paused-holder" : "paused-holder-" + fence.name().toLowerCase();
  }

  @Override
  public String summary() {
    return "A holder paused inside its STRICT-fenced transaction until another process claims the"
        + " expired lease cannot commit under its old term after that claim (invariant 3).";
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
      LeaseManager.builder(target.dataSource())
          .table(leases)
          .instance("setup")
          .createTableIfMissing()
          .build()
          .close();
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
                  round));
          progress.update(round + 1, round + 1);
        }
      }
      List<String> violations = history.check(true, ROWS, BusinessTable.rows(target, business));
      String failure = null;
      if (!violations.isEmpty()) {
        StringBuilder b =
            new StringBuilder(
                "schedule: holder verifies ("
                    + fence
                    + "), stalls until"
                    + " the claim of the next term completes, then writes and commits\n");
        violations.forEach(v -> b.append("    ").append(v).append('\n'));
        failure = b.toString();
      }
      return new PropertyResult(
          id(),
          target.label(),
          rounds,
          rounds,
          violations.size(),
          failure,
          String.join("; ", outcomes),
          (System.nanoTime() - started) / 1_000_000);
    } catch (SQLException e) {
      throw new IllegalStateException(
          "paused-holder run on " + target.label() + " could not be set up: " + e.getMessage(), e);
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
      int round)
      throws SQLException {
    Lease lease = claimUntil(holderSide, System.nanoTime() + 10_000_000_000L);
    if (lease == null) {
      return "round " + round + ": the holder could not claim";
    }
    history.claimed(
        new History.Claim(lease.term(), lease.holder(), lease.instance(), System.nanoTime(), -1));
    DataSource ds = target.dataSource();
    DataSource connections =
        switch (fence) {
          case STRICT ->
              FencedDataSource.wrap(ds, FencingOptions.builder().mode(FencingMode.STRICT).build());
          case VERIFY ->
              FencedDataSource.wrap(ds, FencingOptions.builder().mode(FencingMode.VERIFY).build());
          case NONE -> ds;
        };
    long pauseNanos = 3 * TIMINGS.leaseDuration().toNanos();
    CountDownLatch claimed = new CountDownLatch(1);
    Lease[] next = new Lease[1];
    Thread claimer =
        new Thread(
            () -> {
              Lease l = claimUntil(claimerSide, System.nanoTime() + pauseNanos + 2_000_000_000L);
              if (l != null) {
                long completed = System.nanoTime();
                long dbMs = -1;
                try {
                  dbMs = claimerSide.databaseTimeMillis();
                } catch (LeaseException e) {
                  // unknown; the real-time check still applies
                }
                history.claimed(
                    new History.Claim(l.term(), l.holder(), l.instance(), completed, dbMs));
                next[0] = l;
                claimed.countDown();
              }
            },
            "paused-holder-claimer");
    long txn = round + 1;
    long start = System.nanoTime();
    long invoked = 0;
    long preCommitMs = -1;
    History.End end;
    String error = null;
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = connections.getConnection()) {
      try {
        c.setAutoCommit(false);
        BusinessTable.sessionId(c, target); // the fence verifies here
        if (!stallBeforeWrite) {
          BusinessTable.insert(c, business, txn, 1, lease.term());
        }
        claimer.start();
        // the pause: until the next holder has claimed, or three lease durations
        claimed.await(pauseNanos, TimeUnit.NANOSECONDS);
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
      if (!claimer.isAlive() && claimer.getState() == Thread.State.NEW) {
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
            start,
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
        + (stallBeforeWrite ? "stall before the first write" : "stall after the first write")
        + "): "
        + end
        + (next[0] != null ? ", taken over by term " + next[0].term() : ", no takeover")
        + (error != null ? " (" + abbreviate(error) + ")" : "");
  }

  private static String abbreviate(String s) {
    String line = s.lines().findFirst().orElse("");
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
        // a lock wait behind the holder's transaction timed out: try again
      }
      LockSupport.parkNanos(50_000_000L);
    }
    return null;
  }
}
