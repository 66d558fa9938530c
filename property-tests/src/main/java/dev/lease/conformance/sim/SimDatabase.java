package dev.lease.conformance.sim;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.stream.Stream;
import org.sqlite.Function;

/**
 * The simulation's database: a SQLite file in WAL mode, as the conformance runner's embedded
 * database is, whose clock is the simulation's true time plus the steps the schedule gave it. Every
 * lease statement reads that clock through the SQL function {@value #CLOCK_FUNCTION}, registered on
 * each connection with {@link Function#create} and chosen with {@code
 * LeaseInternals#clockFunctionForTesting}. Each simulated process opens connections of its own, so
 * SQLite's own locking (STRICT's write lock, WAL snapshots) decides between them; the connections
 * wait for locks in virtual time ({@link SimConnection}), never with SQLite's busy handler.
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
  private final Path dir;
  private final String url;
  private final Connection admin;

  /** The database clock's steps so far (NTP on the database server), in milliseconds. */
  long offsetMs;

  SimDatabase(EventLoop loop) throws SQLException {
    this.loop = loop;
    try {
      // in memory where the system offers it (tmpfs): the schedules write a lot, none of it matters
      Path shm = Path.of("/dev/shm");
      this.dir =
          Files.isDirectory(shm) && Files.isWritable(shm)
              ? Files.createTempDirectory(shm, "lease-sim-")
              : Files.createTempDirectory("lease-sim-");
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot create a temporary directory for the simulation's SQLite database", e);
    }
    // no busy handler: a lock conflict comes back at once and the connection waits in virtual time
    this.url =
        "jdbc:sqlite:" + dir.resolve("sim.db") + "?journal_mode=WAL&synchronous=OFF&busy_timeout=0";
    this.admin = open();
    try (Statement s = admin.createStatement()) {
      s.execute(
          "CREATE TABLE "
              + BUSINESS
              + " (txn INTEGER NOT NULL, part INTEGER NOT NULL, term INTEGER NOT NULL)");
    }
  }

  /** A new connection of a simulated process, with the clock function registered. */
  Connection open() throws SQLException {
    Connection c = DriverManager.getConnection(url);
    Function.create(
        c,
        CLOCK_FUNCTION,
        new Function() {
          @Override
          protected void xFunc() throws SQLException {
            result(nowMs());
          }
        });
    return c;
  }

  long nowMs() {
    return EPOCH_MS + loop.now / 1_000_000 + offsetMs;
  }

  /** Forgets the previous schedule (every process connection is closed by then). */
  void reset() throws SQLException {
    offsetMs = 0;
    try (Statement s = admin.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + TABLE);
      s.execute("DELETE FROM " + BUSINESS);
    }
  }

  Row row(String name) throws SQLException {
    try (PreparedStatement ps =
        admin.prepareStatement(
            "SELECT holder, instance, term, expires_at_ms FROM " + TABLE + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next()
            ? new Row(rs.getString(1), rs.getString(2), rs.getLong(3), rs.getLong(4))
            : new Row("", "", 0, 0);
      }
    }
  }

  /** Every lease row by name (the group simulation checks all its keys at once). */
  java.util.Map<String, Row> rows() throws SQLException {
    java.util.Map<String, Row> out = new java.util.HashMap<>();
    try (PreparedStatement ps =
        admin.prepareStatement(
            "SELECT name, holder, instance, term, expires_at_ms FROM " + TABLE)) {
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.put(
              rs.getString(1),
              new Row(rs.getString(2), rs.getString(3), rs.getLong(4), rs.getLong(5)));
        }
      }
    }
    return out;
  }

  /** Drops {@code table} if it exists (the group simulation's members table, between schedules). */
  void drop(String table) throws SQLException {
    try (Statement s = admin.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
    }
  }

  /** Committed business transactions with other than {@code rows} rows: half-applied ones. */
  String halfApplied(int rows) throws SQLException {
    try (PreparedStatement ps =
        admin.prepareStatement(
            "SELECT txn, count(*) FROM " + BUSINESS + " GROUP BY txn HAVING count(*) <> ?")) {
      ps.setInt(1, rows);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next()
            ? "business transaction "
                + rs.getLong(1)
                + " left "
                + rs.getLong(2)
                + " of its "
                + rows
                + " rows in the database"
            : null;
      }
    }
  }

  long businessRows(long txn) throws SQLException {
    try (PreparedStatement ps =
        admin.prepareStatement("SELECT count(*) FROM " + BUSINESS + " WHERE txn = ?")) {
      ps.setLong(1, txn);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  @Override
  public void close() throws SQLException {
    try {
      admin.close();
    } finally {
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      } catch (IOException e) {
        // best effort: the directory is in the system's temporary directory
      }
    }
  }
}
