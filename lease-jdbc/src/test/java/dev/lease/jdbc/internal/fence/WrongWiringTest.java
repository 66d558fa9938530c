package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedConnection;
import dev.lease.jdbc.FencedConnections;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.testing.ForwardingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Two DataSources, one rule (issue 40 item 3): lease SQL runs on the unfenced pool, the
 * application's on the fenced one. Each wrong wiring fails at once with a message that says what to
 * change, and the right wiring beside it (the control) works.
 */
class WrongWiringTest {

  @OnEveryDatabase
  void aLeaseManagerOnAFencedDataSourceFailsAtBuild(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      FencedDataSource fenced = f.fenced(FencingOptions.defaults());
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> f.manager(fenced, "wrong", LeaseTimings.DEFAULTS, System::nanoTime));
      assertTrue(e.getMessage().contains("got a fenced DataSource"), e.getMessage());
      assertTrue(e.getMessage().contains("FencedDataSource.target()"), e.getMessage());

      // a DataSource of the application's own wrapping a fenced one: still found
      IllegalArgumentException wrapped =
          assertThrows(
              IllegalArgumentException.class,
              () ->
                  f.manager(
                      new ForwardingDataSource(fenced),
                      "wrong",
                      LeaseTimings.DEFAULTS,
                      System::nanoTime));
      assertTrue(wrapped.getMessage().contains("got a fenced DataSource"), wrapped.getMessage());

      // the control: the pool underneath builds a manager
      f.manager(fenced.target(), "right", LeaseTimings.DEFAULTS, System::nanoTime)
          .tryClaim("right")
          .orElseThrow();
    }
  }

  @OnEveryDatabase
  void aPoolOverAJdbcFencedUrlIsRefusedBothAsTheLeaseDatabaseAndUnderAFencedDataSource(
      TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      HikariDataSource inside = f.closeLater(PoolPlacementTest.inside(f));
      IllegalArgumentException manager =
          assertThrows(
              IllegalArgumentException.class,
              () -> f.manager(inside, "wrong", LeaseTimings.DEFAULTS, System::nanoTime));
      assertTrue(
          manager.getMessage().contains("hands out fenced connections"), manager.getMessage());
      assertTrue(manager.getMessage().contains("jdbc:fenced:"), manager.getMessage());

      FencedDataSource twice = FencedDataSource.wrap(inside, FencingOptions.defaults());
      SQLException e = assertThrows(SQLException.class, twice::getConnection);
      assertTrue(e.getMessage().contains("fence once"), e.getMessage());
      assertEquals(
          0, inside.getHikariPoolMXBean().getActiveConnections(), "the refused one went back");

      // the control: the same pool, used as it is, hands out fenced connections
      try (Connection c = inside.getConnection()) {
        assertTrue(FencedConnections.isFenced(c));
      }
    }
  }

  @OnEveryDatabase
  void connectionsFencedOneByOneAsTheAgentDoesPassThroughAFencedDataSource(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      DataSource agentLike =
          new ForwardingDataSource(f.pool) {
            @Override
            public Connection getConnection() throws SQLException {
              return FencedConnections.wrap(f.pool.getConnection(), FencingOptions.defaults());
            }
          };
      try (Connection c = FencedDataSource.wrap(agentLike).getConnection()) {
        assertSame(c, c.unwrap(FencedConnection.class), "handed out as it is, not fenced twice");
      }
    }
  }
}
