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
import dev.lease.testing.TestDatabase;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Two DataSources, one rule (issue 40 item 3): lease SQL runs on the unfenced pool, the
 * application's on the fenced one. Each wrong wiring fails at once with a message that says what to
 * change, and the right wiring beside it (the control) works.
 */
class WrongWiringTest {

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
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
                      new Delegating(fenced), "wrong", LeaseTimings.DEFAULTS, System::nanoTime));
      assertTrue(wrapped.getMessage().contains("got a fenced DataSource"), wrapped.getMessage());

      // the control: the pool underneath builds a manager
      f.manager(fenced.target(), "right", LeaseTimings.DEFAULTS, System::nanoTime)
          .tryClaim("right")
          .orElseThrow();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
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

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void connectionsFencedOneByOneAsTheAgentDoesPassThroughAFencedDataSource(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      DataSource agentLike =
          new Delegating(f.pool) {
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

  /** An application's own DataSource that delegates, as routing or tracing wrappers do. */
  static class Delegating implements DataSource {
    final DataSource target;

    Delegating(DataSource target) {
      this.target = target;
    }

    @Override
    public Connection getConnection() throws SQLException {
      return target.getConnection();
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      return target.getConnection(user, password);
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
      return target.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
      target.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
      target.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
      return target.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() {
      return Logger.getGlobal();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      return iface.isInstance(target) ? iface.cast(target) : target.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) throws SQLException {
      return iface.isInstance(target) || target.isWrapperFor(iface);
    }
  }
}
