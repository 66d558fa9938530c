package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Issue 9, path 11: a healthy holder's reads with a fetch size in autocommit mode. The fence runs
 * an autocommit statement as its own verified transaction; pgjdbc then reads through a server-side
 * cursor that the wrapper's commit closed ({@code portal "C_3" does not exist}), and MySQL
 * Connector/J's streaming result set refused the commit. Code that works without a lease must work
 * with one: with plain JDBC and with Spring's {@code JdbcTemplate.setFetchSize}.
 */
class CursorReadTest {

  static final int ROWS = 250;

  private static int fetchSize(TestDatabase db) {
    return db == TestDatabase.MYSQL ? Integer.MIN_VALUE : 10; // Connector/J streams with MIN_VALUE
  }

  private static void fill(Fixture f) throws SQLException {
    try (Connection c = f.pool.getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      for (int i = 1; i <= ROWS; i++) {
        s.addBatch("INSERT INTO " + f.data + " (id, term) VALUES (" + i + ", 0)");
      }
      s.executeBatch();
      c.commit();
    }
  }

  /** Reads every row through a result set with a fetch size, in autocommit mode. */
  private static int readAll(Fixture f, DataSource ds) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      assertTrue(c.getAutoCommit());
      s.setFetchSize(fetchSize(f.db));
      int n = 0;
      try (ResultSet rs = s.executeQuery("SELECT id FROM " + f.data + " ORDER BY id")) {
        assertTrue(c.getAutoCommit(), "still autocommit, as the application set it");
        while (rs.next()) {
          n++;
        }
      }
      assertTrue(c.getAutoCommit());
      return n;
    }
  }

  @OnEveryDatabase
  void aFetchSizeReadInAutocommitModeUnderALeaseReturnsEveryRow(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      fill(f);
      Lease lease = f.manager("reader", LeaseTimings.DEFAULTS).tryClaim("cursor").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        assertEquals(ROWS, readAll(f, ds));
        assertEquals(1, f.verified.get());
        JdbcTemplate jdbc = new JdbcTemplate(ds);
        jdbc.setFetchSize(fetchSize(db));
        List<Integer> ids =
            jdbc.query("SELECT id FROM " + f.data + " ORDER BY id", (rs, i) -> rs.getInt(1));
        assertEquals(ROWS, ids.size());
        assertEquals(2, f.verified.get());
        // the connection is clean afterwards: a write commits as its own transaction
        jdbc.update("UPDATE " + f.data + " SET term = 1 WHERE id = 1");
        assertEquals(1, f.count("term = 1"));
      }
      f.takeOver(lease);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        assertEquals(
            LeaseLostSQLException.REFUSED,
            assertThrows(SQLException.class, () -> readAll(f, ds)).getSQLState(),
            "a stale holder's read is still refused");
      }
    }
  }

  /**
   * Negative control: ending the wrapped transaction when executeQuery returns breaks pgjdbc's
   * cursor and Connector/J's streaming, the first release's behaviour.
   */
  @OnEveryDatabase
  void negativeControlCommittingWhenExecuteQueryReturnsBreaksTheRead(TestDatabase db)
      throws Exception {
    if (db == TestDatabase.MARIADB || db.isSqlite()) {
      return; // their drivers read the rest of the rows into memory (or keep reading) at commit
    }
    try (Fixture f = new Fixture(db, 3)) {
      fill(f);
      Lease lease = f.manager("reader", LeaseTimings.DEFAULTS).tryClaim("cursor").orElseThrow();
      FencedDataSource weak =
          f.fenced(WeakenedFence.weaken(f.options(), WeakenedFence.NO_CURSOR_FIX).build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        SQLException e = assertThrows(SQLException.class, () -> readAll(f, weak));
        String message = String.valueOf(e.getMessage());
        assertTrue(message.contains("portal") || message.contains("Streaming result set"), message);
      }
    }
  }

  /**
   * MySQL streaming keeps the verified transaction open until the result set closes; the lease's
   * loss meanwhile poisons it, and closing the result set says so.
   */
  @OnEveryDatabase
  void aStreamingReadsTransactionEndsWhenItsResultSetCloses(TestDatabase db) throws Exception {
    if (db != TestDatabase.MYSQL) {
      return;
    }
    try (Fixture f = new Fixture(db, 3)) {
      fill(f);
      Lease lease = f.manager("reader", LeaseTimings.DEFAULTS).tryClaim("stream").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        s.setFetchSize(Integer.MIN_VALUE);
        ResultSet rs = s.executeQuery("SELECT id FROM " + f.data + " ORDER BY id");
        rs.next();
        assertTrue(c.getAutoCommit());
        f.skew.addAndGet(java.util.concurrent.TimeUnit.SECONDS.toNanos(11));
        assertTrue(!lease.isHeld()); // lost while the rows stream; the loss poisons off-thread
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (f.poisoned.get() == 0 && System.nanoTime() - deadline < 0) {
          java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
        }
        assertEquals(1, f.poisoned.get());
        while (rs.next()) {
          // the rows already read are a stale holder's read; nothing it writes can commit
        }
        LeaseLostSQLException e = assertThrows(LeaseLostSQLException.class, rs::close);
        assertEquals(LeaseLostSQLException.POISONED, e.getSQLState());
        assertTrue(c.getAutoCommit());
      }
    }
  }
}
