package dev.lease.conformance.sim;

import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.DataSourceAdapter;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLTransientConnectionException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import javax.sql.DataSource;

/**
 * One simulated process: its own clock and keeper timers, its own pool of connections to the
 * database, its faults, the real {@link LeaseManager} of lease-core and a real STRICT {@link
 * FencedDataSource} of lease-jdbc over the same pool, driven step by step.
 */
public final class SimProcess {

  final int id;
  final SimWorld world;
  final ProcessClock clock;
  final ProcessScheduler scheduler;
  final DataSource dataSource = new Pool();
  final DataSource fenced =
      FencedDataSource.wrap(dataSource, FencingOptions.builder().mode(FencingMode.STRICT).build());
  final List<Lease> leases = new ArrayList<>();
  private final List<SimConnection> connections = new ArrayList<>();
  private final Deque<SimConnection> idle = new ArrayDeque<>();
  LeaseManager manager;

  /** A step of the process's worker is running (it may be waiting inside a statement). */
  boolean working;

  /** Keeper timers on the stack: a renewal may be in flight while the rest of the world runs. */
  int keeperDepth;

  boolean paused;
  boolean crashed;
  boolean failMidway;

  /**
   * The transfer this process is sending ({@link SimWorld#transfer}): the term it hands over, the
   * successor's instance and the adoption bound it asked for; the world reads them when the
   * statement has run, as the database does not keep the bound apart from the expiry.
   */
  long transferringTerm;

  String transferringTo;
  long transferAdoptWithinMs;

  /** The transfer statement met the write lock of this process's verified transaction. */
  boolean transferWaited;

  /** This process's claim in progress met a verified transaction's lock (issue 38). */
  boolean claimWaited;

  /** The business transaction in progress, or null. */
  SimTransactions.BusinessTxn openTxn;

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

  /** Runs {@code task} on the process's worker thread after {@code delayMs} of its clock. */
  void scheduleWork(Runnable task, long delayMs) {
    world.loop.schedule(this, clock.toTrue(delayMs * 1_000_000L), task, true);
  }

  /** The process dies: the operating system closes its database connections. */
  void crash() {
    crashed = true;
    connections.forEach(SimConnection::closePhysical);
  }

  /** Closes every connection of this process (the end of a schedule). */
  void closeAll() {
    connections.forEach(SimConnection::closePhysical);
    connections.clear();
    idle.clear();
  }

  void giveBack(SimConnection c) {
    if (c.broken || crashed) {
      c.closePhysical();
    } else if (!idle.contains(c)) {
      idle.push(c);
    }
  }

  /** Connections this process holds with a verified transaction open. */
  /** The connections whose transaction is verified now. */
  List<SimConnection> verifiedConnections() {
    return connections.stream().filter(c -> c.verified && !c.broken).toList();
  }

  boolean hasVerifiedTransaction() {
    return connections.stream().anyMatch(c -> c.verified && !c.broken);
  }

  @Override
  public String toString() {
    return instance();
  }

  /** The process's connection pool: refuses requests as injected; never rolls back on return. */
  private final class Pool extends DataSourceAdapter {
    @Override
    public Connection getConnection() throws SQLException {
      if (crashed) {
        throw new SQLNonTransientConnectionException("the process crashed (simulated)", "08003");
      }
      if (dropNext > 0) {
        dropNext--;
        throw new SQLTransientConnectionException("request dropped (simulated)", "08001");
      }
      SimConnection c;
      do {
        c = idle.poll();
      } while (c != null && c.broken);
      if (c == null) {
        c = new SimConnection(SimProcess.this, world.db.open());
        connections.add(c);
      }
      return c.proxy;
    }
  }
}
