package dev.lease.core.dialect;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.TestDatabase;
import org.junit.jupiter.api.AfterEach;

/**
 * A test of the dialects' statements on a lease table of its own: {@link #open} makes the pool, the
 * table and a manager on it, and the table is dropped after each test.
 */
abstract class LeaseTableTest {

  HikariDataSource ds;
  String table;
  LeaseManager manager;
  Dialect dialect;

  /** A pool of {@code connections} on {@code db}, a new table named from {@code prefix}. */
  void open(TestDatabase db, int connections, String prefix) {
    ds = db.pooled(connections);
    table = TestDatabase.uniqueTable(prefix);
    manager =
        LeaseManager.builder(ds)
            .table(table)
            .instance(prefix + "-test")
            .createTableIfMissing()
            .build();
    dialect = LeaseInternals.dialect(manager);
  }

  @AfterEach
  void closeTable() {
    if (manager != null) {
      manager.close();
      TestDatabase.dropQuietly(ds, table);
      ds.close();
    }
  }
}
