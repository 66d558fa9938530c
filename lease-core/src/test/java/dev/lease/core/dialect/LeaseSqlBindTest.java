package dev.lease.core.dialect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A null parameter binds SQL NULL, as the statements bound it before {@link LeaseSql} (review of
 * issue 21): a null holder in a verify, for one, matches no row instead of failing with an
 * IllegalArgumentException before the statement runs.
 */
class LeaseSqlBindTest {

  private static Connection sqlite() throws SQLException {
    return DriverManager.getConnection("jdbc:sqlite::memory:");
  }

  @Test
  void aNullParameterBindsSqlNull() throws SQLException {
    try (Connection c = sqlite()) {
      List<Object> read =
          LeaseSql.query(
              c,
              "SELECT ? IS NULL, ? IS NULL, ?",
              rs -> List.of(rs.getBoolean(1), rs.getBoolean(2), rs.getLong(3)),
              null,
              "x",
              7L);
      assertEquals(List.of(List.of(true, false, 7L)), read);
    }
  }

  @Test
  void bindVerifyBindsANullHolderAsSqlNull() throws SQLException {
    try (Connection c = sqlite();
        PreparedStatement ps = c.prepareStatement("SELECT ? IS NULL, ? IS NULL, ?")) {
      int next = Dialect.sqlite("leases").bindVerify(ps, 1, "a", null, 5, false, 0);
      assertEquals(4, next);
      try (var rs = ps.executeQuery()) {
        assertTrue(rs.next());
        assertEquals(false, rs.getBoolean(1), "the name");
        assertEquals(true, rs.getBoolean(2), "the null holder");
        assertEquals(5, rs.getLong(3));
      }
    }
  }

  @Test
  void firstReadsTheFirstRowOrNull() throws SQLException {
    try (Connection c = sqlite()) {
      Long first =
          LeaseSql.first(
              c, "SELECT 1 UNION ALL SELECT 2 ORDER BY 1", rs -> rs.getLong(1), new Object[0]);
      assertEquals(Long.valueOf(1), first);
      assertNull(LeaseSql.first(c, "SELECT 1 WHERE ? IS NULL", rs -> rs.getLong(1), "x"));
    }
  }
}
