package dev.lease.conformance.sim;

import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.DataSourceAdapter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransientConnectionException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * One simulated process: its own clock and keeper timers, its own faults on the way to the
 * database, and the real {@link LeaseManager} of lease-core driven step by step.
 */
public final class SimProcess {

  final int id;
  final SimWorld world;
  final ProcessClock clock;
  final ProcessScheduler scheduler;
  final DataSource dataSource = new Faulty();
  final List<Lease> leases = new ArrayList<>();
  LeaseManager manager;
  boolean paused;
  boolean crashed;
  boolean failMidway;

  // injected faults on the way to the database
  int dropNext;
  int delayNext;
  long delayNanos;
  int slowReplyNext;
  long slowReplyNanos;

  SimProcess(SimWorld world, int id, ProcessClock clock) {
    this.world = world;
    this.id = id;
    this.clock = clock;
    this.scheduler = new ProcessScheduler(world.loop, this);
  }

  String instance() {
    return "p" + id;
  }

  /** The newest lease this process claimed, or null. */
  Lease lease() {
    return leases.isEmpty() ? null : leases.get(leases.size() - 1);
  }

  @Override
  public String toString() {
    return instance();
  }

  /** The process's way to the database: refuses, delays or times out requests as injected. */
  private final class Faulty extends DataSourceAdapter {
    @Override
    public Connection getConnection() throws SQLException {
      long timeout = world.timings.attemptTimeout().toNanos();
      if (dropNext > 0) {
        dropNext--;
        throw new SQLTransientConnectionException("request dropped (simulated)", "08001");
      }
      long wait = 0;
      if (delayNext > 0) {
        delayNext--;
        wait = delayNanos;
      }
      wait = Math.max(wait, world.stallUntil - world.loop.now);
      if (wait > timeout) {
        world.loop.pass(timeout);
        throw new SQLTimeoutException(
            "request timed out after " + timeout / 1_000_000 + " ms (simulated)");
      }
      world.loop.pass(wait);
      return world.db.lend(
          () -> {
            if (slowReplyNext > 0) {
              slowReplyNext--;
              // the statement took effect; only its answer is late
              world.loop.pass(Math.min(slowReplyNanos, timeout));
            }
          });
    }
  }
}
