package dev.lease.conformance.sim;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import org.sqlite.Function;

/**
 * The simulation's database: an in-memory SQLite database whose clock is the simulation's true
 * time. The lease statements read it through the SQL function {@value #CLOCK_FUNCTION}, registered
 * on the connection with {@link Function#create} and chosen with {@code
 * LeaseInternals#clockFunctionForTesting}. Every simulated process talks to it through one
 * connection, because the simulation runs one step at a time on one thread.
 */
final class SimDatabase implements AutoCloseable {

  static final String CLOCK_FUNCTION = "lease_test_now";
  static final String TABLE = "sim_leases";
  static final String BUSINESS = "sim_business";

  /** 2026-01-01T00:00:00Z: the database clock at the start of every schedule. */
  static final long EPOCH_MS = 1_767_225_600_000L;

  /** The lease row as the database has it. */
  record Row(String holder, String instance, long term, long expiresAtMs) {}

  private final EventLoop loop;
  private final Connection connection;

  SimDatabase(EventLoop loop) throws SQLException {
    this.loop = loop;
    this.connection = DriverManager.getConnection("jdbc:sqlite::memory:");
    Function.create(
        connection,
        CLOCK_FUNCTION,
        new Function() {
          @Override
          protected void xFunc() throws SQLException {
            result(nowMs());
          }
        });
    try (Statement s = connection.createStatement()) {
      s.execute(
          "CREATE TABLE "
              + BUSINESS
              + " (txn INTEGER NOT NULL, part INTEGER NOT NULL, term INTEGER NOT NULL)");
    }
  }

  long nowMs() {
    return EPOCH_MS + loop.now / 1_000_000;
  }

  /** Forgets the previous schedule. */
  void reset() throws SQLException {
    try (Statement s = connection.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + TABLE);
      s.execute("DELETE FROM " + BUSINESS);
    }
  }

  Row row(String name) throws SQLException {
    try (PreparedStatement ps =
        connection.prepareStatement(
            "SELECT holder, instance, term, expires_at_ms FROM " + TABLE + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next()
            ? new Row(rs.getString(1), rs.getString(2), rs.getLong(3), rs.getLong(4))
            : new Row("", "", 0, 0);
      }
    }
  }

  /** Business transactions with other than two rows: half-applied ones (invariant 4). */
  String halfApplied() throws SQLException {
    try (Statement s = connection.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT txn, count(*) FROM " + BUSINESS + " GROUP BY txn HAVING count(*) <> 2")) {
      return rs.next()
          ? "business transaction " + rs.getLong(1) + " left " + rs.getLong(2) + " of its 2 rows"
          : null;
    }
  }

  long businessRows(long txn) throws SQLException {
    try (PreparedStatement ps =
        connection.prepareStatement("SELECT count(*) FROM " + BUSINESS + " WHERE txn = ?")) {
      ps.setLong(1, txn);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** The raw connection, for test code that plays a broken participant. */
  Connection raw() {
    return connection;
  }

  /**
   * The shared connection as a process sees it: closing it gives it back (runs {@code onClose},
   * where a delayed reply lets time pass) instead of closing it, and it has no network timeout.
   */
  Connection lend(Runnable onClose) {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "close":
                  if (!connection.getAutoCommit()) {
                    connection.rollback();
                    connection.setAutoCommit(true);
                  }
                  onClose.run();
                  return null;
                case "isClosed":
                  return false;
                case "setNetworkTimeout":
                  throw new SQLFeatureNotSupportedException("no network in the simulation");
                case "unwrap":
                  return connection.unwrap((Class<?>) args[0]);
                default:
                  try {
                    return method.invoke(connection, args);
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  }
              }
            });
  }

  @Override
  public void close() throws SQLException {
    connection.close();
  }
}
