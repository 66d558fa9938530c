package dev.lease.conformance.sim;

import dev.lease.conformance.Mutation;
import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLTimeoutException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.sqlite.SQLiteErrorCode;
import org.sqlite.SQLiteException;

/**
 * Statements in virtual time: a request late or timed out, SQLite's locks waited for up to the busy
 * timeout, a late reply, a cancel from lease-jdbc; and what those waits say about claims and
 * transfers held back by a verified transaction.
 */
final class SimStatements {

  private final SimWorld world;

  SimStatements(SimWorld world) {
    this.world = world;
  }

  /**
   * Runs one statement of a process's connection: the request may be late (a delay, a stalled
   * database) or time out, it waits for SQLite's locks up to the connection's busy timeout, its
   * reply may be late; during every wait the rest of the world runs, and a cancel from lease-jdbc
   * (after the loss of the lease it runs under) interrupts it.
   */
  Object execute(SimConnection.Stmt s, String sql, SimWorld.Call call) throws Throwable {
    world.transfers.sending(s, sql);
    SimConnection c = s.connection();
    SimProcess p = c.process;
    Lease bound = LeaseInternals.currentOrNull();
    boolean lostBefore = bound == null || bound.isLost();
    BooleanSupplier cancel = () -> s.isCancelled() || (c.verified && !lostBefore && bound.isLost());
    // lease statements (autocommit on SQLite) give up after the attempt timeout; an application's
    // statement inside its transaction waits as long as the delay lasts
    long timeout =
        c.physical.getAutoCommit() ? world.timings.attemptTimeout().toNanos() : Long.MAX_VALUE / 4;
    long wait = 0;
    if (p.delayNext > 0) {
      p.delayNext--;
      wait = p.delayNanos;
    }
    wait = Math.max(wait, world.stallUntil - world.loop.now);
    if (wait > 0) {
      world.await(p, Math.min(wait, timeout), cancel);
      interruptIfCancelled(s, c, bound, lostBefore, sql);
      if (wait > timeout) {
        throw new SQLTimeoutException(
            "request timed out after " + timeout / 1_000_000 + " ms (simulated)");
      }
    }
    Object result;
    long busyUntil = world.loop.now + c.busyTimeoutMs * 1_000_000L;
    boolean counted = false;
    while (true) {
      if (p.crashed || c.broken) {
        throw new SQLNonTransientConnectionException("the process crashed (simulated)", "08003");
      }
      try {
        s.dbNowMs = world.db.nowMs(); // the database clock the statement reads
        result = call.call();
        break;
      } catch (SQLiteException e) {
        if (e.getResultCode() != SQLiteErrorCode.SQLITE_BUSY || world.loop.now >= busyUntil) {
          throw e;
        }
        if (!counted && Mutation.isTransfer(sql) && p.hasVerifiedTransaction()) {
          p.transferWaited = true;
          world.note(p + " transfer waits for its verified transaction's write lock");
        } else if (!counted && Mutation.isClaim(sql) && anotherVerifiedTransaction(p)) {
          world.stats.claimsThatWaitedForAVerifiedTransaction++;
          p.claimWaited = true;
          for (SimProcess q : world.processes) {
            if (q != p) {
              for (SimConnection held : q.verifiedConnections()) {
                if (heldBack.add(held.verifiedSerial)) {
                  world.stats.verifiedTransactionsThatHeldBackAClaim++;
                }
              }
            }
          }
          world.note(p + " claim waits for a verified transaction's write lock");
        }
        counted = true;
        world.await(p, Math.min(SimWorld.SLICE_NANOS, busyUntil - world.loop.now), cancel);
        interruptIfCancelled(s, c, bound, lostBefore, sql);
      }
    }
    if (Mutation.isVerify(sql) && !c.physical.getAutoCommit()) {
      if (!c.verified) {
        c.verifiedSerial = ++verifiedSerials;
      }
      c.verified = true;
    }
    if (p.slowReplyNext > 0) {
      p.slowReplyNext--;
      // the statement took effect; only its answer is late
      world.await(p, Math.min(p.slowReplyNanos, timeout), () -> false);
    }
    return result;
  }

  /** Numbers the verified transactions; those that held back a claim, by number. */
  private long verifiedSerials;

  private final java.util.Set<Long> heldBack = new java.util.HashSet<>();

  private boolean anotherVerifiedTransaction(SimProcess self) {
    return world.processes.stream().anyMatch(q -> q != self && q.hasVerifiedTransaction());
  }

  /**
   * lease-jdbc cancels the statement running under a lease when the lease is lost, from another
   * thread: wait for that cancel when the loss happened during this statement's wait, then fail as
   * SQLite's interrupt does (rolling back a write's transaction).
   */
  private void interruptIfCancelled(
      SimConnection.Stmt s, SimConnection c, Lease bound, boolean lostBefore, String sql)
      throws SQLException {
    boolean expected = c.verified && !lostBefore && bound.isLost();
    if (!s.isCancelled() && !expected) {
      return;
    }
    try {
      if (!s.cancelled.await(10, TimeUnit.SECONDS)) {
        world.violate(
            "lease-jdbc: the loss of term "
                + bound.term()
                + " did not cancel the statement running under it within 10 s");
        return;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    world.stats.cancelledByLoss++;
    world.note(c.process + " statement cancelled: " + sql);
    String verb = sql.stripLeading().toUpperCase(java.util.Locale.ROOT);
    if (verb.startsWith("INSERT") || verb.startsWith("UPDATE") || verb.startsWith("DELETE")) {
      try {
        c.physical.rollback();
        c.verified = false;
      } catch (SQLException e) {
        // no transaction
      }
    }
    throw new SQLException("[SQLITE_INTERRUPT] interrupted (the statement was cancelled)");
  }
}
