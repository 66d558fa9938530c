package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedConnection;
import dev.lease.jdbc.FencedConnections;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencedDriver;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import org.sqlite.SQLiteDataSource;

/**
 * HikariCP in both placements (anchors, "Wrapper OUTSIDE Hikari vs INSIDE"), with the pool's {@code
 * autoCommit=false}, a connection borrowed before the lease was bound, and a refusal that must not
 * make the pool evict the connection.
 */
class PoolPlacementTest {

  /** The real URL of the fixture's database (for SQLite: its file). */
  static String realUrl(Fixture f) throws SQLException {
    if (f.db.isSqlite()) {
      return f.pool.getDataSource().unwrap(SQLiteDataSource.class).getUrl();
    }
    return f.db.url();
  }

  /**
   * Inside: Hikari's jdbcUrl is {@code jdbc:fenced:...}; the pool's proxies wrap fenced
   * connections.
   */
  static HikariDataSource inside(Fixture f) throws SQLException {
    HikariConfig cfg = new HikariConfig();
    cfg.setJdbcUrl(FencedDriver.PREFIX + realUrl(f).substring("jdbc:".length()));
    cfg.setDriverClassName(FencedDriver.class.getName());
    cfg.setAutoCommit(false);
    cfg.setMaximumPoolSize(1);
    cfg.setMinimumIdle(0);
    if (f.db.isSqlite()) {
      cfg.addDataSourceProperty("journal_mode", "WAL");
      cfg.addDataSourceProperty("busy_timeout", "10000");
    }
    return new HikariDataSource(cfg);
  }

  @OnEveryDatabase
  void insideThePoolTransactionsAreFencedButThePoolsOwnCallsAreNot(TestDatabase db)
      throws Exception {
    FencingOptions before = FencedDriver.defaultOptions();
    try (Fixture f = new Fixture(db, 2)) {
      FencedDriver.setDefaultOptions(f.options().build());
      HikariDataSource pool = f.closeLater(inside(f));
      Lease lease = f.manager("inside", LeaseTimings.DEFAULTS).tryClaim("inside").orElseThrow();
      Connection physical;
      try (Connection c = pool.getConnection()) { // borrowed before the lease is bound
        assertTrue(FencedConnections.isFenced(c), "Hikari's isWrapperFor reaches the fenced one");
        assertSame(c, FencedConnections.wrap(c, FencingOptions.defaults()), "idempotent");
        physical = c.unwrap(FencedConnection.class);
        assertFalse(c.getAutoCommit(), "the pool's autoCommit=false");
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          f.insert(c, 1, lease.term());
          f.insert(c, 2, lease.term());
          c.commit();
        }
      }
      assertEquals(1, f.verified.get());
      assertEquals(2, f.count(null));

      f.takeOver(lease);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        // borrowing, validating and returning under a lost lease: none of it is fenced
        try (Connection c = pool.getConnection()) {
          assertTrue(c.isValid(2));
          assertEquals(0, f.refused.get(), "Hikari's setup and validation calls are not fenced");
          assertEquals(
              LeaseLostSQLException.REFUSED,
              assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 3, lease.term()))
                  .getSQLState());
          assertEquals(
              LeaseLostSQLException.POISONED,
              assertThrows(LeaseLostSQLException.class, c::commit).getSQLState());
        } // Hikari rolls the dirty connection back and resets it: no exception
        try (Connection c = pool.getConnection()) {
          assertSame(
              physical,
              c.unwrap(FencedConnection.class),
              "a refusal must not make the pool evict the connection (SQLState LF001)");
          assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 4, lease.term()));
          c.rollback();
        }
      }
      assertEquals(2, f.count(null), "nothing of the refused transactions committed");
    } finally {
      FencedDriver.setDefaultOptions(before);
    }
  }

  @OnEveryDatabase
  void outsideThePoolWithAutoCommitOffAndAConnectionBorrowedBeforeTheLease(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      HikariConfig cfg = new HikariConfig();
      f.pool.copyStateTo(cfg);
      cfg.setPoolName(cfg.getPoolName() + "-outside");
      cfg.setAutoCommit(false);
      cfg.setMaximumPoolSize(1);
      HikariDataSource pool = f.closeLater(new HikariDataSource(cfg));
      FencedDataSource ds = FencedDataSource.wrap(pool, f.options().build());
      assertSame(pool, ds.unwrap(HikariDataSource.class));
      Lease lease = f.manager("outside", LeaseTimings.DEFAULTS).tryClaim("outside").orElseThrow();
      Class<?> vendor = Class.forName(WrapperTest.vendorConnection(db));
      Object physical;
      try (Connection c = ds.getConnection()) {
        physical = c.unwrap(vendor);
        assertFalse(c.getAutoCommit());
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          f.insert(c, 1, lease.term());
          c.commit();
          f.insert(c, 2, lease.term());
          c.commit();
        }
      }
      assertEquals(2, f.verified.get());
      f.takeOver(lease);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        try (Connection c = ds.getConnection()) {
          assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 3, lease.term()));
        } // closed without rollback: Hikari rolls the dirty connection back
      }
      try (Connection c = ds.getConnection()) {
        assertSame(physical, c.unwrap(vendor), "not evicted");
      }
      assertEquals(2, f.count(null));
    }
  }
}
