package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.TestDatabase;
import java.io.StringReader;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;

/**
 * Issue 35 item 3: a driver object handed out under a lease ({@code unwrap} to the driver's
 * connection, and what it hands out in turn: pgjdbc's {@code CopyManager}) lives no longer than the
 * transaction it was handed out in. When that transaction ends the fence closes the physical
 * connection, so a handle kept past it cannot write after a successor's claim; the pool opens a new
 * connection for the next borrower. In autocommit mode under STRICT such objects are not handed out
 * at all ({@code LF006}). Control: {@link WeakenedFence#DRIVER_OBJECTS_OUTLIVE}, whose kept handle
 * commits a stale write.
 */
class KeptDriverObjectTest {

  private static final AtomicInteger IDS = new AtomicInteger();

  /** The driver's own connection type, as an application unwraps it. */
  private static Class<? extends Connection> driverConnection(TestDatabase db) throws Exception {
    String name =
        switch (db) {
          case POSTGRESQL -> "org.postgresql.core.BaseConnection";
          case MYSQL -> "com.mysql.cj.jdbc.JdbcConnection";
          case MARIADB -> "org.mariadb.jdbc.Connection";
          case SQLITE -> "org.sqlite.SQLiteConnection";
        };
    return Class.forName(name).asSubclass(Connection.class);
  }

  /**
   * A holder unwraps the driver's connection inside its verified transaction, writes through it and
   * commits (healthy); then the database gives the lease to a successor, and the kept handle writes
   * in autocommit mode. Returns the rows of that stale write that committed.
   */
  private static int staleWriteThroughAKeptHandle(TestDatabase db, boolean weakened)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("k" + IDS.incrementAndGet());
      FencingOptions.Builder b = f.options();
      if (weakened) {
        WeakenedFence.weaken(b, WeakenedFence.DRIVER_OBJECTS_OUTLIVE);
      }
      FencedDataSource ds = f.fenced(b.build());
      Connection kept;
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        kept = c.unwrap(driverConnection(db));
        try (Statement s = kept.createStatement()) {
          s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (2, 0)");
        }
        c.commit();
      }
      assertEquals(2, f.count("id IN (1, 2)"), db + ": the healthy transaction committed both");
      f.takeOver(lease);
      try {
        kept.setAutoCommit(true);
        try (Statement s = kept.createStatement()) {
          s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (3, 0)");
        }
      } catch (SQLException closed) {
        // the retired connection
      }
      // the pool's next borrower is not hurt by the retired connection
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (4, 0)");
      }
      assertEquals(1, f.count("id = 4"), db + ": the next borrower writes");
      return f.count("id = 3");
    }
  }

  @OnEveryServer
  void aDriverConnectionKeptPastItsTransactionCannotWrite(TestDatabase db) throws Exception {
    assertEquals(0, staleWriteThroughAKeptHandle(db, false), db + ": the stale write");
  }

  @OnEveryDatabase
  void negativeControlAKeptHandleOnAConnectionNotRetiredCommitsAStaleWrite(TestDatabase db)
      throws Exception {
    assertEquals(1, staleWriteThroughAKeptHandle(db, true), db + ": the control commits");
  }

  /**
   * pgjdbc's COPY: inside the verified transaction it commits with it; a {@code CopyManager} kept
   * past the transaction copies nothing after a successor's claim. Control: it copies.
   */
  @Test
  void postgresqlACopyManagerKeptPastItsTransactionCopiesNothing() throws Exception {
    assertEquals(0, copyAfterTakeover(false), "postgresql: the stale copy");
    assertEquals(1, copyAfterTakeover(true), "postgresql: the control copies");
  }

  private static int copyAfterTakeover(boolean weakened) throws Exception {
    try (Fixture f = new Fixture(TestDatabase.POSTGRESQL, 3)) {
      Lease lease = f.holding("c" + IDS.incrementAndGet());
      FencingOptions.Builder b = f.options();
      if (weakened) {
        WeakenedFence.weaken(b, WeakenedFence.DRIVER_OBJECTS_OUTLIVE);
      }
      FencedDataSource ds = f.fenced(b.build());
      org.postgresql.copy.CopyManager copy;
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        copy = c.unwrap(PGConnection.class).getCopyAPI();
        copy.copyIn(
            "COPY " + f.data + " (id, term) FROM STDIN WITH (FORMAT csv)",
            new StringReader("1,0\n"));
        c.commit();
      }
      assertEquals(1, f.count("id = 1"), "postgresql: COPY in the transaction commits");
      f.takeOver(lease);
      try {
        copy.copyIn(
            "COPY " + f.data + " (id, term) FROM STDIN WITH (FORMAT csv)",
            new StringReader("5,0\n"));
      } catch (SQLException closed) {
        // the retired connection
      }
      return f.count("id = 5");
    }
  }

  /**
   * In autocommit mode under STRICT a driver object is not handed out: its writes would be loose.
   */
  @OnEveryDatabase
  void underStrictNoDriverObjectIsHandedOutInAutocommitMode(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("a" + IDS.incrementAndGet());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection()) {
        SQLException e =
            assertThrows(SQLException.class, () -> c.unwrap(driverConnection(db)), db.name());
        assertEquals(LeaseLostSQLException.OUTSIDE_TRANSACTION, e.getSQLState());
        assertTrue(e.getMessage().contains("setAutoCommit(false)"), e.getMessage());
      }
      // with no lease bound the wrapper hands it out (nothing is fenced then)
      try (Connection c = f.fenced(f.options().build()).getConnection()) {
        assertTrue(driverConnection(db).isInstance(c.unwrap(driverConnection(db))));
      }
    }
  }
}
