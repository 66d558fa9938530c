package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedConnection;
import dev.lease.jdbc.FencedConnections;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** The wrappers leave no escape hatch: every method overridden, back-pointers lead to wrappers. */
class WrapperTest {

  /** The methods of {@code iface} that {@code type} does not override (OTel's WrapperTest). */
  static List<String> notOverridden(Class<?> type, Class<?> iface) throws Exception {
    List<String> missing = new ArrayList<>();
    for (Method m : iface.getMethods()) {
      if (Modifier.isStatic(m.getModifiers())) {
        continue;
      }
      Method impl = type.getMethod(m.getName(), m.getParameterTypes());
      if (impl.getDeclaringClass().isInterface()) {
        missing.add(m.getName());
      }
    }
    return missing;
  }

  @Test
  void everyJdbcMethodIsOverriddenIncludingDefaults() throws Exception {
    assertEquals(List.of(), notOverridden(FencingConnection.class, Connection.class));
    assertEquals(List.of(), notOverridden(FencingStatement.class, Statement.class));
    assertEquals(List.of(), notOverridden(FencingPreparedStatement.class, PreparedStatement.class));
    assertEquals(List.of(), notOverridden(FencingCallableStatement.class, CallableStatement.class));
    assertEquals(List.of(), notOverridden(FencingResultSet.class, ResultSet.class));
    assertEquals(List.of(), notOverridden(FencingDatabaseMetaData.class, DatabaseMetaData.class));
    assertEquals(List.of(), notOverridden(FencedDataSource.class, DataSource.class));
  }

  /** Negative control: the check finds a default method a class leaves to its interface. */
  @Test
  void theOverrideCheckCatchesAMissingMethod() throws Exception {
    assertTrue(
        notOverridden(UrlDataSource.class, DataSource.class).contains("createConnectionBuilder"));
  }

  @OnEveryDatabase
  void backPointersReturnWrappersAndUnwrapNeverBypassesTheFence(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      FencedDataSource ds = f.fenced(f.options().build());
      Lease lease = f.manager("w", LeaseTimings.DEFAULTS).tryClaim("w").orElseThrow();
      try (Connection c = ds.getConnection()) {
        assertTrue(c instanceof FencedConnection);
        assertSame(
            c, c.unwrap(Connection.class), "unwrap(Connection) must not hand out the driver's");
        assertSame(c, c.unwrap(FencedConnection.class));
        assertTrue(c.isWrapperFor(FencedConnection.class));
        assertTrue(FencedConnections.isFenced(c));
        assertSame(c, FencedConnections.wrap(c, FencingOptions.defaults()), "idempotent");
        Connection other =
            FencedConnections.wrap(f.pool.getConnection(), FencingOptions.defaults());
        assertNotEquals(c, other, "identity equality");
        assertNotEquals(c.hashCode(), System.identityHashCode(other));
        other.close();
        assertTrue(other.isClosed());
        other.close(); // idempotent

        try (Statement s = c.createStatement();
            ResultSet rs = s.executeQuery("SELECT 1")) {
          assertSame(c, s.getConnection());
          assertSame(s, rs.getStatement());
          assertTrue(s.execute("SELECT 1"));
          try (ResultSet again = s.getResultSet()) {
            assertSame(s, again.getStatement());
          }
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT ?")) {
          ps.setInt(1, 7);
          try (ResultSet rs = ps.executeQuery()) {
            assertSame(ps, rs.getStatement());
            assertSame(c, ps.getConnection());
          }
        }
        DatabaseMetaData md = c.getMetaData();
        assertSame(c, md.getConnection());
        try (ResultSet tables = md.getTables(null, null, "%", null)) {
          Statement s = tables.getStatement();
          if (s != null) {
            assertSame(c, s.getConnection());
          }
        }
        assertSame(f.pool, ds.unwrap(HikariDataSource.class), "Spring Boot's DataSourceUnwrapper");
        assertTrue(ds.isWrapperFor(HikariDataSource.class));

        // a vendor object can run SQL past the wrapper: the open transaction is verified first
        Class<?> vendor = Class.forName(vendorConnection(db));
        c.setAutoCommit(false);
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          if (db.isSqlite()) {
            // not handed out under a lease on SQLite (KeptDriverObjectTest)
            assertThrows(SQLException.class, () -> c.unwrap(vendor));
          } else {
            Object raw = c.unwrap(vendor);
            assertTrue(vendor.isInstance(raw));
            assertFalse(raw instanceof FencedConnection);
          }
          assertEquals(1, f.verified.get(), "verified before the vendor object was handed out");
        }
        c.rollback();
      }
    }
  }

  static String vendorConnection(TestDatabase db) {
    switch (db) {
      case POSTGRESQL:
        return "org.postgresql.PGConnection";
      case MYSQL:
        return "com.mysql.cj.jdbc.JdbcConnection";
      case MARIADB:
        return "org.mariadb.jdbc.Connection";
      default:
        return "org.sqlite.SQLiteConnection";
    }
  }
}
