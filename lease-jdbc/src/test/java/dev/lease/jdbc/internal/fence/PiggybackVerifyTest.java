package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.PgWire;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.io.ByteArrayInputStream;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The verify carried in the first statement's round trip (issue 12): every result shape is
 * presented as without the verify, the cases it cannot carry verify separately, a refused verify
 * sent ahead of a write leaves nothing behind, and the round trips are counted on the wire.
 */
class PiggybackVerifyTest {

  static final AtomicInteger IDS = new AtomicInteger();

  /** What a sequence of calls on the first statement of a transaction returned, as text. */
  @FunctionalInterface
  interface Shape {
    String run(Connection c, Fixture f) throws SQLException;
  }

  /**
   * Runs {@code shape} as the first statement of a transaction, once with no lease bound (the
   * driver's own answer) and once under a held lease; both must answer alike, and the lease-bound
   * run must have carried the verify along ({@code piggybacked}) or not.
   */
  static void sameAsRaw(Fixture f, FencedDataSource ds, Shape shape, boolean piggybacked)
      throws Exception {
    sameAsRaw(f, ds, shape, piggybacked, 1);
  }

  static void sameAsRaw(
      Fixture f, FencedDataSource ds, Shape shape, boolean piggybacked, int verifies)
      throws Exception {
    sameAsRaw(f, ds, ds, shape, piggybacked, verifies);
  }

  /** As above, the raw run through {@code raw} (the pool itself, or the wrapper with no lease). */
  static void sameAsRaw(
      Fixture f,
      javax.sql.DataSource raw,
      FencedDataSource ds,
      Shape shape,
      boolean piggybacked,
      int verifies)
      throws Exception {
    Lease lease = f.holding("s" + IDS.incrementAndGet());
    for (int id = 1; id <= 3; id++) {
      try (Connection c = f.pool.getConnection()) {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.executeUpdate("DELETE FROM " + f.data);
          s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (" + id + ", " + id + ")");
        }
        c.commit();
      }
    }
    String rawOutcome;
    try (Connection c = raw.getConnection()) {
      c.setAutoCommit(false);
      rawOutcome = outcome(shape, c, f);
      c.rollback();
    }
    int verifiedBefore = f.verified.get();
    String fenced;
    int carried;
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      FencingConnection fc = c.unwrap(FencingConnection.class);
      int before = fc.fence.piggybacked();
      fenced = outcome(shape, c, f);
      carried = fc.fence.piggybacked() - before;
      c.rollback();
    }
    assertEquals(rawOutcome, fenced, "the fenced first statement answers as the raw one");
    assertEquals(piggybacked ? 1 : 0, carried, "first statements that carried the verify");
    assertEquals(verifies, f.verified.get() - verifiedBefore, "verifies of the transaction");
  }

  static String outcome(Shape shape, Connection c, Fixture f) {
    try {
      return shape.run(c, f);
    } catch (SQLException e) {
      return "error " + e.getSQLState() + " " + e.getMessage();
    }
  }

  static String rows(ResultSet rs) throws SQLException {
    if (rs == null) {
      return "no result set";
    }
    StringBuilder b = new StringBuilder("rows[");
    while (rs.next()) {
      b.append(rs.getInt(1)).append(',');
    }
    return b.append(']').toString();
  }

  /** Every result the statement has, in order, as JDBC's getMoreResults loop reads them. */
  static String all(Statement s, boolean first) throws SQLException {
    List<String> out = new ArrayList<>();
    boolean isRs = first;
    for (int i = 0; i < 5; i++) {
      if (isRs) {
        out.add(rows(s.getResultSet()));
      } else {
        long n = s.getLargeUpdateCount();
        if (n == -1) {
          out.add("end " + s.getUpdateCount());
          break;
        }
        out.add("count " + n + "/" + s.getUpdateCount());
      }
      isRs = s.getMoreResults();
    }
    return String.join(" ", out);
  }

  private static Fixture pg() throws SQLException {
    return new Fixture(TestDatabase.POSTGRESQL, 4);
  }

  // ---- every result shape, as without the verify
  // --------------------------------------------------------

  /**
   * The result shapes of a first statement every database answers alike ({@code select} reads the
   * fixture's rows, {@code update} changes some): plain, large and generic calls, on a statement
   * and on a prepared one. {@link MySqlPiggybackVerifyTest} runs them too, with the shapes only
   * MySQL and MariaDB have.
   */
  static List<Shape> resultShapes(String select, String update) {
    return List.of(
        (c, x) -> rows(c.createStatement().executeQuery(select)),
        (c, x) -> "" + c.createStatement().executeUpdate(update),
        (c, x) -> "" + c.createStatement().executeLargeUpdate(update),
        (c, x) -> {
          Statement s = c.createStatement();
          return all(s, s.execute(select));
        },
        (c, x) -> {
          Statement s = c.createStatement();
          return all(s, s.execute(update));
        },
        (c, x) -> {
          PreparedStatement ps =
              c.prepareStatement("SELECT id FROM " + x.data + " WHERE id >= ? ORDER BY id");
          ps.setInt(1, 2);
          return rows(ps.executeQuery()) + " " + all(ps, ps.execute());
        },
        (c, x) -> {
          PreparedStatement ps =
              c.prepareStatement("UPDATE " + x.data + " SET note = ? WHERE id >= ?");
          ps.setString(1, "p");
          ps.setInt(2, 2);
          return ps.executeUpdate() + " " + all(ps, false);
        },
        (c, x) -> {
          PreparedStatement ps =
              c.prepareStatement("UPDATE " + x.data + " SET note = ? WHERE id >= ?");
          ps.setString(1, "p");
          ps.setLong(2, 1);
          return ps.executeLargeUpdate() + " " + all(ps, false);
        },
        (c, x) -> {
          PreparedStatement ps =
              c.prepareStatement("UPDATE " + x.data + " SET note = ? WHERE id = ?");
          ps.setString(1, "p");
          ps.setInt(2, 3);
          return all(ps, ps.execute());
        });
  }

  @OnEveryDatabase
  void everyResultShapeOfAFirstStatementIsPresentedAsWithoutTheVerify(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 4)) {
      FencedDataSource ds = f.fenced(f.options().build());
      boolean pg = db == TestDatabase.POSTGRESQL;
      String select = "SELECT id FROM " + f.data + " ORDER BY id";
      String update = "UPDATE " + f.data + " SET note = 'x' WHERE id >= 2";
      List<Shape> shapes = new ArrayList<>(resultShapes(select, update));
      shapes.addAll(
          List.of(
              // the driver's own errors for a call of the wrong kind
              (c, x) -> rows(c.createStatement().executeQuery(update)),
              (c, x) -> "" + c.createStatement().executeUpdate(select),
              // a failing statement, then the transaction as the driver leaves it
              (c, x) ->
                  outcome((cc, xx) -> "" + cc.createStatement().executeUpdate("UPDATE nope"), c, x)
                      .replaceAll("Position: \\d+", "")));
      for (int i = 0; i < shapes.size(); i++) {
        boolean failing = i == shapes.size() - 1;
        // a failing statement that carried the verify leaves the transaction unverified (and
        // PostgreSQL aborts it): no verified event
        sameAsRaw(f, ds, shapes.get(i), pg && !failing, failing && pg ? 0 : 1);
      }
    }
  }

  /**
   * A prepared statement reused across transactions carries the verify in each (PostgreSQL, and
   * MySQL/MariaDB with {@code allowMultiQueries}; SQLite verifies separately), once per
   * transaction.
   */
  @OnEveryDatabase
  void aPreparedStatementReusedAcrossTransactionsCarriesTheVerifyEachTime(TestDatabase db)
      throws Exception {
    boolean carries = !db.isSqlite();
    try (Fixture f = db.isMySqlFamily() ? MySqlPiggybackVerifyTest.multi(db) : new Fixture(db, 4)) {
      FencedDataSource ds = f.fenced(f.options().build());
      Lease lease = f.holding("reuse");
      int before = f.verified.get();
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection();
          PreparedStatement ins =
              c.prepareStatement("INSERT INTO " + f.data + " (id, term, note) VALUES (?, ?, ?)");
          PreparedStatement sel =
              c.prepareStatement("SELECT term, note FROM " + f.data + " WHERE id = ?")) {
        c.setAutoCommit(false);
        FencingConnection fc = c.unwrap(FencingConnection.class);
        for (int id = 1; id <= 8; id++) { // past pgjdbc's prepareThreshold (5): server-prepared
          ins.setInt(1, id);
          ins.setLong(2, 100 + id);
          ins.setString(3, "n" + id);
          assertEquals(1, ins.executeUpdate());
          sel.setInt(1, id);
          try (ResultSet rs = sel.executeQuery()) {
            assertTrue(rs.next());
            assertEquals(100 + id, rs.getLong(1));
            assertEquals("n" + id, rs.getString(2));
          }
          c.commit();
          if (id == 4) {
            ins.clearParameters();
            assertThrows(SQLException.class, ins::executeUpdate, "parameters were cleared");
            c.rollback();
          }
        }
        assertEquals(carries ? 8 : 0, fc.fence.piggybacked());
      }
      // the transaction whose statement lacked its parameters: the driver refuses it before the
      // carried verify is sent; SQLite's separate verify ran
      assertEquals(carries ? 8 : 9, f.verified.get() - before, "one verify per transaction");
      assertEquals(8, f.count("note LIKE 'n%'"));
    }
  }

  // ---- what cannot carry it verifies separately
  // --------------------------------------------------------
  /**
   * What cannot carry the verify runs it as a statement of its own and answers as the driver does
   * without the fence. On MySQL/MariaDB with {@code allowMultiQueries} ({@link
   * MySqlPiggybackVerifyTest#multi}), where a first statement can carry it, the raw runs go to the
   * pool itself; the shapes each driver has besides the common ones are added for it.
   */
  @OnEveryDatabase
  void whatCannotCarryTheVerifyVerifiesSeparatelyAndAnswersAsWithoutIt(TestDatabase db)
      throws Exception {
    boolean mysql = db.isMySqlFamily();
    try (Fixture f = mysql ? MySqlPiggybackVerifyTest.multi(db) : new Fixture(db, 4)) {
      FencedDataSource ds = f.fenced(f.options().build());
      String insert = "INSERT INTO " + f.data + " (id, term) VALUES (7, 7)";
      String select = "SELECT id FROM " + f.data + " ORDER BY id";
      List<Shape> fallbacks = new ArrayList<>();
      fallbacks.add(
          (c, x) -> {
            Statement s = c.createStatement();
            s.executeUpdate(insert, Statement.RETURN_GENERATED_KEYS);
            return rows(s.getGeneratedKeys());
          });
      fallbacks.add(
          (c, x) -> {
            PreparedStatement ps =
                mysql
                    ? c.prepareStatement(insert, Statement.RETURN_GENERATED_KEYS)
                    : c.prepareStatement(insert, new String[] {"id"});
            ps.executeUpdate();
            return rows(ps.getGeneratedKeys());
          });
      fallbacks.add(
          (c, x) -> {
            Statement s = c.createStatement();
            s.addBatch(insert);
            s.addBatch("UPDATE " + x.data + " SET note = 'b'");
            return java.util.Arrays.toString(s.executeBatch());
          });
      fallbacks.add(
          (c, x) -> {
            PreparedStatement ps = c.prepareStatement("UPDATE " + x.data + " SET note = ?");
            ps.setString(1, "b");
            ps.addBatch();
            return java.util.Arrays.toString(ps.executeBatch());
          });
      for (int size : db == TestDatabase.MYSQL ? new int[] {1, Integer.MIN_VALUE} : new int[] {1}) {
        // a fetch size; Connector/J's streaming
        fallbacks.add(
            (c, x) -> {
              Statement s = c.createStatement();
              s.setFetchSize(size);
              return rows(s.executeQuery(select));
            });
      }
      fallbacks.add(
          (c, x) -> {
            Statement s = c.createStatement();
            return all(s, s.execute(insert + "; " + insert.replace("(7, 7)", "(8, 8)")));
          });
      if (!db.isSqlite()) {
        fallbacks.add(
            (c, x) -> {
              PreparedStatement ps = c.prepareStatement("UPDATE " + x.data + " SET note = ?");
              ps.setAsciiStream(1, new ByteArrayInputStream("s".getBytes()), 1);
              return "" + ps.executeUpdate();
            });
        fallbacks.add(
            (c, x) -> {
              c.setReadOnly(true);
              try {
                return rows(c.createStatement().executeQuery("SELECT id FROM " + x.data));
              } finally {
                c.rollback();
                c.setReadOnly(false);
              }
            });
      }
      if (mysql) {
        fallbacks.addAll(mySqlFallbacks(select));
      }
      if (db == TestDatabase.POSTGRESQL) {
        try (Connection c = f.pool.getConnection();
            Statement s = c.createStatement()) {
          s.execute("CREATE FUNCTION " + f.data + "_f() RETURNS int AS 'SELECT 1' LANGUAGE sql");
        }
        fallbacks.add(
            (c, x) -> {
              CallableStatement cs = c.prepareCall("{? = call " + x.data + "_f()}");
              cs.registerOutParameter(1, java.sql.Types.INTEGER);
              cs.execute();
              return "" + cs.getInt(1);
            });
      }
      for (Shape shape : fallbacks) {
        sameAsRaw(f, mysql ? f.pool : ds, ds, shape, false, 1);
      }
    }
  }

  /**
   * MySQL/MariaDB's own ways a first statement cannot carry the verify: an updatable result set,
   * MariaDB Connector/J's {@code SET STATEMENT ... FOR} for a row limit and a query timeout.
   */
  private static List<Shape> mySqlFallbacks(String select) {
    return List.of(
        (c, x) -> {
          Statement s = c.createStatement(ResultSet.TYPE_FORWARD_ONLY, ResultSet.CONCUR_UPDATABLE);
          ResultSet rs = s.executeQuery("SELECT id, note FROM " + x.data + " WHERE id = 2");
          rs.next();
          rs.updateString(2, "u");
          rs.updateRow();
          return rows(c.createStatement().executeQuery(select))
              + " "
              + rows(
                  c.createStatement()
                      .executeQuery("SELECT id FROM " + x.data + " WHERE note = 'u'"));
        },
        (c, x) -> {
          Statement s = c.createStatement();
          s.setMaxRows(2); // MariaDB Connector/J: SET STATEMENT SQL_SELECT_LIMIT=2 FOR <text>
          return rows(s.executeQuery(select));
        },
        (c, x) -> {
          PreparedStatement ps = c.prepareStatement(select);
          ps.setQueryTimeout(5); // MariaDB Connector/J: SET STATEMENT max_statement_time=5 FOR
          return rows(ps.executeQuery());
        });
  }

  @OnEveryDatabase
  void autocommitStatementsAndTheOptionOffVerifySeparately(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 4)) {
      Lease lease = f.holding("auto");
      for (boolean option : new boolean[] {true, false}) {
        FencedDataSource ds = f.fenced(f.options().piggybackVerify(option).build());
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection()) {
          FencingConnection fc = c.unwrap(FencingConnection.class);
          f.insert(c, IDS.incrementAndGet(), 1); // autocommit
          assertEquals(0, fc.fence.piggybacked(), "never in autocommit mode");
          c.setAutoCommit(false);
          f.insert(c, IDS.incrementAndGet(), 1);
          c.commit();
          assertEquals(
              option && db == TestDatabase.POSTGRESQL ? 1 : 0,
              fc.fence.piggybacked(),
              "option " + option);
        }
      }
    }
  }

  /**
   * pgjdbc's {@code autosave=always} rolls back to a savepoint set before the combined text when
   * the statement fails, which also undoes the verify's lock: the transaction stays unverified, and
   * the next statement carries the verify again before anything commits.
   */
  @OnEveryServer
  void afterAFailedCarriedStatementTheNextStatementCarriesTheVerifyAgain(TestDatabase db)
      throws Exception {
    assumeTrue(db == TestDatabase.POSTGRESQL, "only PostgreSQL carries the verify along");
    try (Fixture f = pg()) {
      Lease lease = f.holding("autosave");
      FencedDataSource ds =
          FencedDataSource.wrap(
              new UrlDataSource(db.url() + "&autosave=always"), f.options().build());
      int before = f.verified.get();
      int id = IDS.incrementAndGet();
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        FencingConnection fc = c.unwrap(FencingConnection.class);
        assertThrows(
            SQLException.class, () -> c.createStatement().executeUpdate("UPDATE nope SET x = 1"));
        assertEquals(0, f.verified.get() - before, "not verified: the statement failed");
        assertEquals(0, fc.fence.piggybacked(), "counted only when the text ran");
        f.insert(c, id, 1);
        c.commit();
        assertEquals(1, fc.fence.piggybacked(), "the insert carried the verify again");
      }
      assertEquals(1, f.verified.get() - before);
      assertEquals(1, f.count("id = " + id));
    }
  }

  /** A statement prepared before its lease was bound (a statement cache's) verifies separately. */
  @OnEveryDatabase
  void aStatementPreparedBeforeTheLeaseWasBoundVerifiesSeparately(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 4)) {
      Lease lease = f.holding("early");
      FencedDataSource ds = f.fenced(f.options().build());
      int before = f.verified.get();
      try (Connection c = ds.getConnection();
          PreparedStatement early =
              c.prepareStatement("INSERT INTO " + f.data + " (id, term) VALUES (?, 1)")) {
        FencingConnection fc = c.unwrap(FencingConnection.class);
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          c.setAutoCommit(false);
          early.setInt(1, IDS.incrementAndGet());
          assertEquals(1, early.executeUpdate());
          c.commit();
          f.insert(c, IDS.incrementAndGet(), 1); // prepared under the lease: carries it
          c.commit();
        }
        assertEquals(db == TestDatabase.POSTGRESQL ? 1 : 0, fc.fence.piggybacked());
      }
      assertEquals(2, f.verified.get() - before);
    }
  }

  // ---- a refused verify sent ahead of a write leaves nothing behind
  // ----------------------------------------

  @OnEveryDatabase
  void aRefusedVerifySentAheadOfAWriteLeavesNothingBehind(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 4)) {
      for (int i = 0; i < 4; i++) {
        FencingMode mode = FencingMode.values()[i % 2];
        Outcome o = refusedAheadOfWrite(f, f.fenced(f.options().mode(mode).build()), i >= 2);
        assertEquals(LeaseLostSQLException.REFUSED, o.first, mode + " " + o);
        assertEquals(LeaseLostSQLException.POISONED, o.second, mode + " " + o);
        assertEquals(LeaseLostSQLException.POISONED, o.commit, mode + " " + o);
        assertEquals(0, o.rows, "nothing of the refused transaction committed: " + mode + o);
        assertEquals(db == TestDatabase.POSTGRESQL ? 1 : 0, o.piggybacked, mode + " " + o);
        assertTrue(o.resultsHidden, "the refused statement's results are not handed out: " + o);
      }
    }
  }

  /**
   * Negative control: a fence that sends the combined text but ignores the verify's empty result
   * commits the stale holder's write, and the test above would catch it.
   */
  @OnEveryDatabase
  void negativeControlIgnoringTheCarriedVerifysEmptyResultCommitsTheWrite(TestDatabase db)
      throws Exception {
    assumeTrue(db == TestDatabase.POSTGRESQL, "only PostgreSQL carries the verify along");
    try (Fixture f = new Fixture(db, 4)) {
      FencedDataSource ds =
          f.fenced(
              // the server no longer runs the write at all
              WeakenedFence.weaken(
                      f.options(),
                      WeakenedFence.PREVIOUS_REFUSAL,
                      WeakenedFence.PIGGYBACK_IGNORES_REFUSAL)
                  .build());
      Outcome o = refusedAheadOfWrite(f, ds, false);
      assertEquals(1, o.piggybacked, o.toString());
      assertNull(o.first, o.toString());
      assertEquals(2, o.rows, "the weakened fence commits the stale writes: " + o);
    }
  }

  record Outcome(
      String first,
      String second,
      String commit,
      int rows,
      int piggybacked,
      boolean resultsHidden) {}

  /**
   * Claims, lets the database give the lease to a successor (the holder still believes it holds
   * it), then runs a transaction whose first statement is a write and tries every later step.
   */
  static Outcome refusedAheadOfWrite(Fixture f, FencedDataSource ds, boolean prepared)
      throws Exception {
    Lease lease = f.holding("r" + IDS.incrementAndGet());
    f.takeOver(lease);
    assertTrue(lease.isHeld(), "the holder still believes it holds the lease");
    int id = IDS.incrementAndGet();
    String first = null;
    String second = null;
    String commit = null;
    boolean hidden;
    int carried;
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("INSERT INTO " + f.data + " (id, term) VALUES (?, 1)");
        Statement text = c.createStatement()) {
      c.setAutoCommit(false);
      FencingConnection fc = c.unwrap(FencingConnection.class);
      Statement s = prepared ? ps : text;
      try {
        if (prepared) {
          ps.setInt(1, id);
          ps.executeUpdate();
        } else {
          text.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (" + id + ", 1)");
        }
      } catch (SQLException e) {
        first = e.getSQLState();
      }
      hidden =
          fc.fence.piggybacked() == 0 || (s.getUpdateCount() == -1 && s.getResultSet() == null);
      try {
        f.insert(c, id + 100_000, 1);
      } catch (SQLException e) {
        second = e.getSQLState();
      }
      try {
        c.commit();
      } catch (SQLException e) {
        commit = e.getSQLState();
      }
      carried = fc.fence.piggybacked();
      c.rollback();
    }
    int rows = f.count("id = " + id + " OR id = " + (id + 100_000));
    return new Outcome(first, second, commit, rows, carried, hidden);
  }

  // ---- round trips, counted on the wire
  // --------------------------------------------------------------

  @OnEveryServer
  void aFencedOneStatementTransactionTakesTheRoundTripsOfARawOne(TestDatabase db) throws Exception {
    assumeTrue(db == TestDatabase.POSTGRESQL, "only PostgreSQL carries the verify along");
    try (Fixture f = pg();
        PgWire proxy = new PgWire("127.0.0.1", 5432)) {
      Lease lease = f.holding("wire");
      UrlDataSource direct = new UrlDataSource(proxy.url());
      long raw = roundTrips(f, proxy, direct, null);
      long carried =
          roundTrips(f, proxy, FencedDataSource.wrap(direct, f.options().build()), lease);
      // negative control: the separate verify is one round trip more, and the count sees it
      long separate =
          roundTrips(
              f,
              proxy,
              FencedDataSource.wrap(direct, f.options().piggybackVerify(false).build()),
              lease);
      assertEquals(2, raw, "raw: the UPDATE (with BEGIN) and the COMMIT");
      assertEquals(raw, carried, "the verify travels with the first statement");
      assertEquals(raw + 1, separate, "the separate verify costs one more");
    }
  }

  /**
   * Statement caching still works: a prepared statement that carries the verify, prepared anew in
   * each transaction as applications and pools do, is server-prepared by pgjdbc after its threshold
   * like the raw one, and later transactions send no Parse at all. Negative control: with
   * server-side prepare off ({@code prepareThreshold=0}) the count sees a Parse every time.
   */
  @OnEveryServer
  void theCombinedStatementIsServerPreparedLikeTheRawOne(TestDatabase db) throws Exception {
    assumeTrue(db == TestDatabase.POSTGRESQL, "only PostgreSQL carries the verify along");
    try (Fixture f = pg();
        PgWire proxy = new PgWire("127.0.0.1", 5432)) {
      Lease lease = f.holding("cache");
      UrlDataSource cached = new UrlDataSource(proxy.url(5));
      UrlDataSource uncached = new UrlDataSource(proxy.url(0));
      FencingOptions options = f.options().build();
      assertEquals(0, parsesLate(f, proxy, cached, null), "raw");
      assertEquals(0, parsesLate(f, proxy, FencedDataSource.wrap(cached, options), lease));
      // 4 transactions: the UPDATE and the COMMIT parsed each time; fenced, the verify too (a
      // STRICT
      // commit out of doubt carries no proof: CommitProofTest)
      assertEquals(8, parsesLate(f, proxy, uncached, null), "control: raw, never server-prepared");
      assertEquals(
          12,
          parsesLate(f, proxy, FencedDataSource.wrap(uncached, options), lease),
          "control: the verify, the statement and the COMMIT parsed in each transaction");
    }
  }

  /** Parse messages of the last 4 of 10 one-statement transactions on one connection. */
  private static long parsesLate(Fixture f, PgWire proxy, javax.sql.DataSource ds, Lease lease)
      throws Exception {
    try (LeaseContext.Scope scope = lease == null ? null : LeaseContext.bind(lease);
        Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      long before = 0;
      for (int i = 0; i < 10; i++) {
        if (i == 6) {
          before = proxy.parses();
        }
        try (PreparedStatement ps =
            c.prepareStatement("UPDATE " + f.data + " SET note = ? WHERE id = ?")) {
          ps.setString(1, "c" + i);
          ps.setInt(2, 1);
          ps.executeUpdate();
        }
        c.commit();
      }
      if (lease != null) {
        assertEquals(10, c.unwrap(FencingConnection.class).fence.piggybacked());
      }
      return proxy.parses() - before;
    }
  }

  /** Round trips of one 1-statement transaction (a prepared UPDATE, then commit). */
  private static long roundTrips(Fixture f, PgWire proxy, javax.sql.DataSource ds, Lease lease)
      throws Exception {
    try (LeaseContext.Scope scope = lease == null ? null : LeaseContext.bind(lease);
        Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("UPDATE " + f.data + " SET note = ? WHERE id = ?")) {
      c.setAutoCommit(false);
      long[] counts = new long[3];
      for (int i = 0; i < 3; i++) {
        long before = proxy.roundTrips();
        ps.setString(1, "w" + i);
        ps.setInt(2, 1);
        ps.executeUpdate();
        c.commit();
        counts[i] = proxy.roundTrips() - before;
      }
      assertArrayEquals(new long[] {counts[0], counts[0], counts[0]}, counts);
      assertFalse(counts[0] == 0);
      return counts[0];
    }
  }
}
