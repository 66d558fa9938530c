package dev.lease.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The benchmarks' data: a table of {@code rows} counters {@code (id, v)}, updated by primary key.
 */
final class CounterTable {

  private CounterTable() {}

  /** Creates {@code table} with ids {@code 0..rows-1} at 0, on a pool whose autocommit is off. */
  static void create(DataSource pool, String table, int rows) throws SQLException {
    try (Connection c = pool.getConnection()) {
      try (Statement s = c.createStatement()) {
        s.execute(
            "CREATE TABLE " + table + " (id INTEGER NOT NULL PRIMARY KEY, v BIGINT NOT NULL)");
      }
      try (PreparedStatement ps =
          c.prepareStatement("INSERT INTO " + table + " (id, v) VALUES (?, 0)")) {
        for (int i = 0; i < rows; i++) {
          ps.setInt(1, i);
          ps.addBatch();
        }
        ps.executeBatch();
      }
      c.commit();
    }
  }
}
