package dev.lease.core.dialect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.WeakenedSql;
import dev.lease.core.dialect.Dialect.Held;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A statement over a list of leases (a batched renewal, release or transfer of a manager holding
 * many leases, a group member's keys) reads and locks only the rows it names: it must not wait for
 * another holder's strict verify, which holds a share lock on that holder's own row for as long as
 * its transaction is open. Found on MariaDB 10.11: an UPDATE naming 334 of a table's 1,000 rows
 * scanned the whole primary key and, under REPEATABLE READ, locked every row it passed, so a
 * batched renewal waited for any other holder's open transaction (and ran out of its lock wait:
 * leases lost) and two group members' claims deadlocked. The rows here: 1,000 held at term 1,
 * another transaction share-locks row {@code k0900} exactly as a strict verify does; the batches
 * name up to 400 other rows. The negative control ({@link WeakenedSql#batchScansTable}, MySQL and
 * MariaDB) leaves the index to the optimizer: the renewal waits for the verify and runs out of its
 * lock wait. PostgreSQL locks only the rows it changes whatever its plan; SQLite has one write lock
 * for the whole database (its strict verify takes it, so every lease statement waits for it).
 */
class BatchLockFootprintTest extends LeaseTableTest {

  private static final int ROWS = 1_000;
  private static final long TIMEOUT_MS = 2_000;

  static Stream<TestDatabase> servers() {
    return TestDatabase.servers();
  }

  private void open(TestDatabase db) throws SQLException {
    open(db, 4, "footprint");
    StringBuilder sql =
        new StringBuilder("INSERT INTO ")
            .append(table)
            .append(" (name, holder, term, expires_at_ms) VALUES ");
    for (int i = 0; i < ROWS; i++) {
      sql.append(i == 0 ? "" : ", ")
          .append("(?, 'h', 1, ")
          .append(dialect.clock())
          .append(" + 600000)");
    }
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.toString())) {
      for (int i = 0; i < ROWS; i++) {
        ps.setString(i + 1, name(i));
      }
      ps.executeUpdate();
      if (db.isMySqlFamily()) {
        // the statistics a table that has lived for a while has (the optimizer's choice of a scan
        // rests on them)
        try (Statement s = c.createStatement()) {
          s.execute("ANALYZE TABLE " + table);
        }
      }
    }
  }

  private static String name(int i) {
    return String.format("k%04d", i);
  }

  private static List<Held> held(int from, int to) {
    List<Held> leases = new ArrayList<>();
    for (int i = from; i < to; i++) {
      leases.add(new Held(name(i), "h", 1));
    }
    return leases;
  }

  /** Runs {@code body} while another transaction holds a strict verify's lock on {@code k0900}. */
  private <T> T whileAnotherHolderVerified(Dialect d, Step<T> body) throws SQLException {
    try (Connection verified = ds.getConnection()) {
      verified.setAutoCommit(false);
      try (PreparedStatement ps = verified.prepareStatement(d.clientCheckedVerifySql(true))) {
        int i = 1;
        for (Object v : d.verifyParameters(name(900), "h", 1, true, 60_000)) {
          ps.setObject(i++, v);
        }
        try (ResultSet rs = ps.executeQuery()) {
          assertTrue(rs.next(), "the other holder's verify found its row");
        }
      }
      try (Connection c = ds.getConnection()) {
        return d.inStep(c, TIMEOUT_MS, (conn, timeoutMs) -> body.run(conn, timeoutMs));
      } finally {
        verified.rollback();
      }
    }
  }

  private interface Step<T> {
    T run(Connection c, long timeoutMs) throws SQLException;
  }

  @Execution(ExecutionMode.CONCURRENT) // waits on lock timeouts at worst: databases side by side
  @ParameterizedTest(name = "{0}")
  @MethodSource("servers")
  void batchesWaitForNoOtherHoldersVerify(TestDatabase db) throws SQLException {
    open(db);
    Set<Held> renewed =
        whileAnotherHolderVerified(
            dialect, (c, t) -> dialect.renewAll(c, held(0, 400), 600_000, t));
    assertEquals(400, renewed.size(), db + ": renewed");
    Map<String, Long> transferred =
        whileAnotherHolderVerified(
            dialect, (c, t) -> dialect.transferAll(c, held(400, 700), "successor", 60_000, t));
    assertEquals(300, transferred.size(), db + ": transferred");
    int released =
        whileAnotherHolderVerified(dialect, (c, t) -> dialect.releaseAll(c, held(0, 400), t));
    assertEquals(400, released, db + ": released");
    // a batch of which one lease was taken over meanwhile (another term): the transfer changes
    // fewer rows than asked and reads back which (MySQL/MariaDB: a second statement, whose
    // SET STATEMENT prefix MySQL Connector/J refuses to executeQuery)
    List<Held> partly = new ArrayList<>(held(700, 710));
    partly.add(new Held(name(710), "h", 2));
    Map<String, Long> some =
        whileAnotherHolderVerified(
            dialect, (c, t) -> dialect.transferAll(c, partly, "successor", 60_000, t));
    assertEquals(10, some.size(), db + ": transferred of a batch with one lease taken over");
  }

  /** Negative control: the index left to the optimizer, the renewal waits for the verify. */
  @Execution(ExecutionMode.CONCURRENT)
  @OnMySqlFamily
  void negativeControlBatchWithoutTheIndexWaitsForAnotherHoldersVerify(TestDatabase db)
      throws SQLException {
    open(db);
    Dialect scanning =
        new MySqlDialect(
            table, null, "MariaDB".equals(dialect.product()), WeakenedSql.batchScansTable());
    SQLException e =
        assertThrows(
            SQLException.class,
            () ->
                whileAnotherHolderVerified(
                    scanning, (c, t) -> scanning.renewAll(c, held(0, 400), 600_000, t)),
            db + ": the scanning renewal should have waited for the verify's lock");
    // the lock wait's bound or the statement's own time bound (MariaDB's max_statement_time),
    // whichever comes first
    String m = String.valueOf(e.getMessage());
    assertTrue(m.contains("Lock wait timeout") || m.contains("max_statement_time"), db + ": " + e);
  }
}
