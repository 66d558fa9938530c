package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.ConnectionSource;
import dev.lease.testing.TestDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Lease statements borrow the application's pooled connections, and not every pool resets what a
 * borrower changed (HikariCP does; a plain or hand-made pool does not). So every lease statement
 * must leave the session as it found it: auto-commit, isolation, network timeout, time zone, lock
 * and statement timeouts, SQLite's busy timeout. Here one physical connection serves every call, as
 * a pool that never resets anything would.
 */
class PooledSessionTest {

  static Stream<Arguments> databasesAndAutoCommit() {
    return TestDatabase.all()
        .flatMap(db -> Stream.of(Arguments.of(db, true), Arguments.of(db, false)));
  }

  @ParameterizedTest(name = "{0} autoCommit={1}")
  @MethodSource("databasesAndAutoCommit")
  void leaseStatementsLeaveTheSessionAsTheyFoundIt(TestDatabase db, boolean autoCommit)
      throws Exception {
    String table = TestDatabase.uniqueTable("session");
    try (Connection physical = db.unpooled().getConnection()) {
      DataSource single = new SingleConnectionDataSource(physical);
      applicationSettings(db, physical);
      if (!db.isSqlite()) {
        physical.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
        physical.setNetworkTimeout(Executors.newSingleThreadExecutor(), 12_345);
      }
      physical.setAutoCommit(autoCommit);
      List<String> before = snapshot(db, physical);

      LeaseManager m =
          LeaseManager.builder(single)
              .table(table)
              .instance("session")
              .failurePolicy(FailurePolicy.logOnly())
              .createTableIfMissing()
              .build();
      try {
        assertEquals(before, snapshot(db, physical), "after build()");
        Lease lease = m.tryClaim("session").orElseThrow();
        assertEquals(before, snapshot(db, physical), "after tryClaim");
        assertTrue(lease.renew());
        assertTrue(lease.verify());
        m.databaseTimeMillis();
        assertEquals(before, snapshot(db, physical), "after renew, verify, databaseTimeMillis");
        lease.release();
        assertEquals(before, snapshot(db, physical), "after release");
      } finally {
        m.close();
        if (!physical.getAutoCommit()) {
          physical.rollback();
        }
        TestDatabase.dropQuietly(single, table);
      }
    }
  }

  /** What an application might have set on its session. */
  private static void applicationSettings(TestDatabase db, Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      switch (db) {
        case POSTGRESQL -> {
          s.execute("SET lock_timeout = '7s'");
          s.execute("SET statement_timeout = '8s'");
          s.execute("SET TIME ZONE 'Asia/Kolkata'");
          s.execute("SET idle_in_transaction_session_timeout = '9s'");
        }
        case MYSQL, MARIADB ->
            s.execute(
                "SET time_zone = '+05:30', innodb_lock_wait_timeout = 7,"
                    + " idle_transaction_timeout = 9, lock_wait_timeout = 11");
        // through sqlite-jdbc, which lease steps read it from (no statement); the snapshot reads
        // the library's real value with the PRAGMA
        case SQLITE -> c.unwrap(org.sqlite.SQLiteConnection.class).setBusyTimeout(7000);
      }
    }
  }

  private static List<String> snapshot(TestDatabase db, Connection c) throws SQLException {
    List<String> state = new ArrayList<>();
    state.add("autoCommit=" + c.getAutoCommit());
    try {
      state.add("networkTimeout=" + c.getNetworkTimeout());
    } catch (SQLFeatureNotSupportedException e) {
      state.add("networkTimeout=unsupported");
    }
    String query =
        switch (db) {
          case POSTGRESQL ->
              "SELECT current_setting('lock_timeout'),"
                  + " current_setting('statement_timeout'), current_setting('TimeZone'),"
                  + " current_setting('transaction_isolation'),"
                  + " current_setting('idle_in_transaction_session_timeout')";
          case MYSQL, MARIADB ->
              "SELECT @@session.time_zone, @@session.innodb_lock_wait_timeout,"
                  + " @@session.tx_isolation, @@session.timestamp = UNIX_TIMESTAMP(NOW(6)),"
                  + " @@session.idle_transaction_timeout, @@session.lock_wait_timeout";
          case SQLITE -> "PRAGMA busy_timeout";
        };
    if (db.isSqlite()) {
      state.add("isolation=" + c.getTransactionIsolation());
    }
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(query)) {
      rs.next();
      for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
        state.add(rs.getMetaData().getColumnLabel(i) + "=" + rs.getString(i));
      }
    }
    if (!c.getAutoCommit()) {
      c.rollback(); // a pool hands connections out with no transaction open
    }
    return state;
  }

  /** Hands out one connection again and again; close() does nothing. */
  static final class SingleConnectionDataSource extends ConnectionSource {
    private final Connection connection;

    SingleConnectionDataSource(Connection physical) {
      this.connection =
          (Connection)
              Proxy.newProxyInstance(
                  getClass().getClassLoader(),
                  new Class<?>[] {Connection.class},
                  (proxy, method, args) -> {
                    if (method.getName().equals("close")) {
                      return null;
                    }
                    try {
                      return method.invoke(physical, args);
                    } catch (InvocationTargetException e) {
                      throw e.getCause();
                    }
                  });
    }

    @Override
    public Connection getConnection() {
      return connection;
    }
  }
}
