package dev.lease.core.dialect;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.OnEveryServer;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * A holder paused (GC, kill -STOP) between a lease statement's UPDATE and its COMMIT must not keep
 * the lease row locked until it resumes: the server ends the paused lease session after the attempt
 * timeout, so a successor's claim goes through. Found by the agent's leader tests, where a leader
 * stopped in the middle of a renewal blocked the takeover for as long as it was stopped. The
 * negative control pauses in a plain transaction (no lease session): the row stays locked.
 * PostgreSQL ({@code idle_in_transaction_session_timeout}) and MariaDB ({@code
 * idle_transaction_timeout}, through both drivers); MySQL 8 has no such bound, SQLite no server.
 */
class PausedLeaseSessionTest extends LeaseTableTest {

  private static final long TIMEOUT_MS = 1_000;

  /** How long the paused holder stays paused: far past the timeout. */
  private static final long PAUSE_MS = 4_500;

  private void open(TestDatabase db) {
    open(db, 4, "paused");
    manager.tryClaim("paused").orElseThrow().release();
  }

  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryServer
  void holderPausedInsideALeaseStatementDoesNotBlockASuccessor(TestDatabase db) throws Exception {
    open(db);
    CountDownLatch updated = new CountDownLatch(1);
    CompletableFuture<Void> paused =
        CompletableFuture.runAsync(
            () -> {
              try (Connection c = ds.getConnection()) {
                dialect.inLeaseSession(
                    c,
                    TIMEOUT_MS,
                    conn -> {
                      touch(conn);
                      updated.countDown();
                      try {
                        Thread.sleep(PAUSE_MS); // the paused holder, between UPDATE and COMMIT
                      } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                      }
                      return null;
                    });
              } catch (Exception e) {
                // the server ended the paused session: what this test wants
              }
            });
    assertTrue(updated.await(10, TimeUnit.SECONDS));
    long waited = successorTouches();
    assertTrue(
        waited < PAUSE_MS / 2,
        db + ": the successor waited " + waited + " ms for the paused lease session");
    paused.get(PAUSE_MS * 2, TimeUnit.MILLISECONDS);
  }

  /** Negative control: paused in a plain transaction, the row stays locked past the timeout. */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryServer
  void holderPausedInAPlainTransactionBlocksASuccessor(TestDatabase db) throws Exception {
    open(db);
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      touch(c);
      long waited = successorTouches();
      assertTrue(waited >= 3 * TIMEOUT_MS, db + ": the control did not block: " + waited + " ms");
      c.rollback();
      c.setAutoCommit(true);
    }
  }

  private void touch(Connection c) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("UPDATE " + table + " SET revision = revision + 1 WHERE name = ?")) {
      ps.setString(1, "paused");
      ps.executeUpdate();
    }
  }

  /**
   * A successor's write of the row, bounded at 3 × the timeout by its own lock timeout in the
   * control; returns how long it took (or waited before failing).
   */
  private long successorTouches() throws SQLException {
    long start = System.nanoTime();
    try (Connection c = ds.getConnection()) {
      try (Statement s = c.createStatement()) {
        s.execute(
            dialect instanceof PostgresDialect
                ? "SET lock_timeout = '" + (3 * TIMEOUT_MS + 500) + "ms'"
                : "SET SESSION innodb_lock_wait_timeout = " + (3 * TIMEOUT_MS / 1000 + 1));
      }
      try {
        touch(c);
      } catch (SQLException e) {
        // the control's lock wait timed out
      } finally {
        try (Statement s = c.createStatement()) {
          s.execute(
              dialect instanceof PostgresDialect
                  ? "RESET lock_timeout"
                  : "SET SESSION innodb_lock_wait_timeout = DEFAULT");
        }
      }
    }
    return (System.nanoTime() - start) / 1_000_000;
  }
}
