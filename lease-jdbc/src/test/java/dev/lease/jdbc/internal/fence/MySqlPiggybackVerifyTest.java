package dev.lease.jdbc.internal.fence;

import static dev.lease.jdbc.internal.fence.PiggybackVerifyTest.IDS;
import static dev.lease.jdbc.internal.fence.PiggybackVerifyTest.refusedAheadOfWrite;
import static dev.lease.jdbc.internal.fence.PiggybackVerifyTest.rows;
import static dev.lease.jdbc.internal.fence.PiggybackVerifyTest.sameAsRaw;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.internal.fence.PiggybackVerifyTest.Outcome;
import dev.lease.jdbc.internal.fence.PiggybackVerifyTest.Shape;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * The verify carried in the first statement's round trip on MySQL and MariaDB (issue 24), where the
 * user's driver sends texts of several statements ({@code allowMultiQueries=true}): through MySQL
 * Connector/J ({@code mysql}) and MariaDB Connector/J ({@code mariadb}) against MariaDB. As {@link
 * PiggybackVerifyTest} does for PostgreSQL: every result shape is presented as without the verify,
 * what cannot carry it verifies separately, a refused verify sent ahead of a write leaves nothing
 * behind, and the refused statement never runs in the server at all (a write to a non-transactional
 * table, which no rollback undoes, stays absent), with negative controls.
 */
class MySqlPiggybackVerifyTest {

  /**
   * A fixture whose pool connects with {@code allowMultiQueries=true}, its 4 connections opened and
   * each given STRICT's session bounds by one fenced transaction, as a pool serving leased work has
   * them: the first transaction on a session without them verifies separately (see {@link
   * #theFirstStatementRunsWithStrictsSessionBoundsInPlace}). Raw runs go to the pool itself, which
   * leaves them in place (a borrower without a lease through the wrapper puts the session's own
   * back).
   */
  static Fixture multi(TestDatabase db) throws Exception {
    Fixture f = new Fixture(db, 4, true);
    warm(f, 4);
    return f;
  }

  /** Opens {@code n} connections of the pool at once and runs a fenced transaction on each. */
  static void warm(Fixture f, int n) throws Exception {
    Lease lease =
        f.manager("warm", LeaseTimings.DEFAULTS).tryClaim("w" + IDS.incrementAndGet()).get();
    FencedDataSource ds = f.fenced(f.options().piggybackVerify(false).build());
    List<Connection> open = new ArrayList<>();
    try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
      for (int i = 0; i < n; i++) {
        Connection c = ds.getConnection();
        open.add(c);
        c.setAutoCommit(false);
        c.createStatement().executeQuery("SELECT 1").close();
        c.commit();
      }
    } finally {
      for (Connection c : open) {
        c.close();
      }
    }
  }

  private static String warnings(SQLWarning w) {
    StringBuilder b = new StringBuilder("warnings[");
    for (; w != null; w = w.getNextWarning()) {
      b.append(w.getErrorCode()).append(' ').append(w.getMessage()).append(';');
    }
    return b.append(']').toString();
  }

  // ---- every result shape, as without the verify
  // --------------------------------------------------------

  @OnMySqlFamily
  void everyResultShapeOfAFirstStatementIsPresentedAsWithoutTheVerify(TestDatabase db)
      throws Exception {
    try (Fixture f = multi(db)) {
      FencedDataSource ds = f.fenced(f.options().build());
      String select = "SELECT id FROM " + f.data + " ORDER BY id";
      String update = "UPDATE " + f.data + " SET note = 'x' WHERE id >= 2";
      String warn = "SELECT CAST(CONCAT(id, 'x') AS SIGNED) FROM " + f.data + " ORDER BY id";
      List<Shape> shapes = new ArrayList<>(PiggybackVerifyTest.resultShapes(select, update));
      shapes.addAll(
          List.of(
              // the statement's warnings, and only its own (the verify has none)
              (c, x) -> {
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(warn);
                return rows(rs) + " " + warnings(s.getWarnings());
              },
              (c, x) -> {
                PreparedStatement ps =
                    c.prepareStatement(warn.replace("ORDER", "WHERE id > ? ORDER"));
                ps.setInt(1, 1);
                ResultSet rs = ps.executeQuery();
                return rows(rs) + " " + warnings(ps.getWarnings());
              },
              // what the session reports about the statement that ran last
              (c, x) -> {
                Statement s = c.createStatement();
                s.executeUpdate(update);
                return rows(s.executeQuery("SELECT ROW_COUNT()"));
              },
              // keys were not asked for: the driver's own answer
              (c, x) -> {
                Statement s = c.createStatement();
                s.executeUpdate("INSERT INTO " + x.data + " (id, term) VALUES (9, 9)");
                return rows(s.getGeneratedKeys());
              },
              (c, x) -> rows(c.createStatement().executeQuery(" \n select id from " + x.data)),
              // a failing statement, then the transaction as the driver leaves it
              (c, x) ->
                  PiggybackVerifyTest.outcome(
                      (cc, xx) -> "" + cc.createStatement().executeUpdate("UPDATE nope SET x = 1"),
                      c,
                      x)));
      for (int i = 0; i < shapes.size(); i++) {
        boolean failing = i == shapes.size() - 1;
        // a failing statement that carried the verify leaves the transaction unverified: no
        // verified event (the next statement verifies again)
        sameAsRaw(f, f.pool, ds, shapes.get(i), !failing, failing ? 0 : 1);
      }
      // a call of the wrong kind, or one whose kind the first word does not settle: each driver
      // answers it its own way (Connector/J refuses before sending; MariaDB Connector/J sends it,
      // then hands out an empty result set or throws), so it verifies separately and the driver
      // answers as without a lease
      List<Shape> ownWay =
          List.of(
              (c, x) -> rows(c.createStatement().executeQuery(update)),
              (c, x) -> "" + c.createStatement().executeUpdate(select),
              (c, x) -> rows(c.createStatement().executeQuery("SELECT 1 INTO @xa_probe")),
              (c, x) -> rows(c.createStatement().executeQuery("(SELECT 1)")),
              (c, x) ->
                  ""
                      + c.createStatement()
                          .executeUpdate("DELETE FROM " + x.data + " WHERE id = 3 RETURNING id"),
              (c, x) -> "" + c.createStatement().executeUpdate("DO 1"),
              (c, x) -> {
                PreparedStatement ps = c.prepareStatement(update);
                return rows(ps.executeQuery());
              },
              (c, x) -> {
                PreparedStatement ps = c.prepareStatement(select);
                return "" + ps.executeUpdate();
              });
      for (Shape shape : ownWay) {
        sameAsRaw(f, f.pool, ds, shape, false, 1);
      }
    }
  }

  /**
   * STRICT's session bounds are in place before the first statement runs, carried or not: on a
   * session without them (a new one, or one a borrower without a lease had) the first transaction
   * verifies separately, which sets them before the statement; later transactions carry the verify
   * and find them in place. A borrower without a lease gets the session's own values back.
   */
  @OnMySqlFamily
  void theFirstStatementRunsWithStrictsSessionBoundsInPlace(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 1, true)) {
      LeaseTimings timings = LeaseTimings.DEFAULTS;
      long bound = SessionBounds.seconds(timings.leaseDuration().toMillis());
      Lease lease = f.manager("holder", timings).tryClaim("bounds").get();
      String read = "SELECT @@session.innodb_lock_wait_timeout, @@session.idle_transaction_timeout";
      String own;
      try (Connection c = f.pool.getConnection();
          ResultSet rs = c.createStatement().executeQuery(read)) {
        rs.next();
        own = rs.getLong(1) + "," + rs.getLong(2);
      }
      assertTrue(!own.equals(bound + "," + bound), "the server's defaults differ: " + own);
      for (boolean carried : new boolean[] {true, false}) {
        FencedDataSource ds = f.fenced(f.options().piggybackVerify(carried).build());
        for (int round = 0; round < 2; round++) {
          try (Connection c = ds.getConnection()) {
            FencingConnection fc = c.unwrap(FencingConnection.class);
            try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
              c.setAutoCommit(false);
              for (int t = 0; t < 3; t++) {
                try (ResultSet rs = c.createStatement().executeQuery(read)) {
                  rs.next();
                  assertEquals(
                      bound + "," + bound,
                      rs.getLong(1) + "," + rs.getLong(2),
                      "carried " + carried + ", transaction " + t + " of borrow " + round);
                }
                c.commit();
              }
              assertEquals(carried ? 2 : 0, fc.fence.piggybacked(), "the first verifies alone");
            }
            c.setAutoCommit(true);
            try (ResultSet rs = c.createStatement().executeQuery(read)) {
              rs.next();
              assertEquals(own, rs.getLong(1) + "," + rs.getLong(2), "put back without a lease");
            }
          }
        }
      }
    }
  }

  // ---- what cannot carry it verifies separately
  // --------------------------------------------------------
  /**
   * The driver decides: without {@code allowMultiQueries} the verify is a statement of its own, and
   * with server-side prepares ({@code useServerPrepStmts=true}) a prepared statement's verify is,
   * while a plain statement's still rides along. The answers are the driver's own either way.
   */
  @OnMySqlFamily
  void theDriversConfigurationDecidesWhetherTheVerifyIsCarried(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 4, false)) {
      Lease lease = f.holding("driver");
      String[][] cases = {
        {"", "0", "0"},
        {"&allowMultiQueries=true", "1", "1"},
        {"&allowMultiQueries=true&useServerPrepStmts=true", "1", "0"},
      };
      for (String[] k : cases) {
        FencedDataSource ds =
            FencedDataSource.wrap(new UrlDataSource(db.url() + k[0]), f.options().build());
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection()) {
          c.setAutoCommit(false);
          FencingConnection fc = c.unwrap(FencingConnection.class);
          // a new session: the first transaction verifies alone and sets STRICT's bounds
          c.createStatement().executeQuery("SELECT 1").close();
          c.commit();
          assertEquals(0, fc.fence.piggybacked(), "first transaction" + k[0]);
          int id = IDS.incrementAndGet();
          assertEquals(
              1,
              c.createStatement()
                  .executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (" + id + ", 1)"));
          c.commit();
          assertEquals(Integer.parseInt(k[1]), fc.fence.piggybacked(), "plain" + k[0]);
          try (PreparedStatement ps =
              c.prepareStatement("SELECT term FROM " + f.data + " WHERE id = ?")) {
            ps.setInt(1, id);
            assertEquals("rows[1,]", rows(ps.executeQuery()));
          }
          c.commit();
          assertEquals(
              Integer.parseInt(k[1]) + Integer.parseInt(k[2]),
              fc.fence.piggybacked(),
              "prepared" + k[0]);
        }
      }
    }
  }

  // ---- round trips, counted on the wire
  // --------------------------------------------------------------

  /**
   * A fenced 1-statement transaction takes the round trips of a raw one, counted by a loopback
   * proxy. Negative control: the separate verify is one round trip more, and the count sees it.
   */
  @OnMySqlFamily
  void aFencedOneStatementTransactionTakesTheRoundTripsOfARawOne(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2, true);
        WireRoundTrips proxy = new WireRoundTrips("127.0.0.1", 3306)) {
      Lease lease = f.holding("wire");
      UrlDataSource direct = new UrlDataSource(proxy.through(db.url()) + "&allowMultiQueries=true");
      long raw = roundTrips(f, proxy, direct, null, 0);
      long carried =
          roundTrips(f, proxy, FencedDataSource.wrap(direct, f.options().build()), lease, 3);
      long separate =
          roundTrips(
              f,
              proxy,
              FencedDataSource.wrap(direct, f.options().piggybackVerify(false).build()),
              lease,
              0);
      assertEquals(2, raw, "raw: the UPDATE and the COMMIT");
      assertEquals(raw, carried, "the verify travels with the first statement");
      assertEquals(raw + 1, separate, "the separate verify costs one more");
    }
  }

  /**
   * Round trips of one 1-statement transaction (a prepared UPDATE, then commit), the same in each
   * of 3 transactions on one connection after a first one (which gives the session STRICT's bounds
   * and verifies alone); {@code piggybacked}: the transactions that carried the verify.
   */
  private static long roundTrips(
      Fixture f, WireRoundTrips proxy, javax.sql.DataSource ds, Lease lease, int piggybacked)
      throws Exception {
    try (LeaseContext.Scope scope = lease == null ? null : LeaseContext.bind(lease);
        Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      long[] counts = new long[4];
      for (int i = 0; i < 4; i++) {
        long before = proxy.roundTrips();
        try (PreparedStatement ps =
            c.prepareStatement("UPDATE " + f.data + " SET note = ? WHERE id = ?")) {
          ps.setString(1, "w" + i);
          ps.setInt(2, 1);
          ps.executeUpdate();
        }
        c.commit();
        counts[i] = proxy.roundTrips() - before;
      }
      assertEquals(counts[1], counts[2], java.util.Arrays.toString(counts));
      assertEquals(counts[1], counts[3], java.util.Arrays.toString(counts));
      if (lease != null) {
        assertEquals(piggybacked, c.unwrap(FencingConnection.class).fence.piggybacked());
      }
      return counts[1];
    }
  }

  // ---- a refused verify sent ahead of a write leaves nothing behind
  // ----------------------------------------

  @OnMySqlFamily
  void aRefusedVerifySentAheadOfAWriteLeavesNothingBehind(TestDatabase db) throws Exception {
    try (Fixture f = multi(db)) {
      for (int i = 0; i < 4; i++) {
        FencingMode mode = FencingMode.values()[i % 2];
        Outcome o = refusedAheadOfWrite(f, f.fenced(f.options().mode(mode).build()), i >= 2);
        assertEquals(LeaseLostSQLException.REFUSED, o.first(), mode + " " + o);
        assertEquals(LeaseLostSQLException.POISONED, o.second(), mode + " " + o);
        assertEquals(LeaseLostSQLException.POISONED, o.commit(), mode + " " + o);
        assertEquals(0, o.rows(), "nothing of the refused transaction committed: " + mode + o);
        assertEquals(1, o.piggybacked(), mode + " " + o);
        assertTrue(o.resultsHidden(), "the refused statement's results are not handed out: " + o);
      }
    }
  }

  /**
   * The server stops the text at the refusing verify: the statement sent along never runs. Its
   * write goes to a non-transactional table (MyISAM), which no rollback undoes, so a statement that
   * ran would leave its row. Control: a verify that returns no row instead of failing ({@link
   * Refusal#CLIENT}) lets the server run the statement, and the row is there although the fence
   * still refuses the transaction.
   */
  @OnMySqlFamily
  void theStatementSentAlongARefusedVerifyNeverRuns(TestDatabase db) throws Exception {
    try (Fixture f = multi(db)) {
      String side = TestDatabase.uniqueTable("jside");
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE " + side + " (id INTEGER NOT NULL PRIMARY KEY) ENGINE=MyISAM");
      }
      try {
        for (Refusal refusal : new Refusal[] {Refusal.SERVER, Refusal.CLIENT}) {
          for (boolean prepared : new boolean[] {false, true}) {
            FencedDataSource ds = f.fenced(WeakenedFence.refusal(f.options(), refusal).build());
            Lease lease = f.holding("n" + IDS.incrementAndGet());
            f.takeOver(lease);
            int id = IDS.incrementAndGet();
            String state;
            int carried;
            try (LeaseContext.Scope scope = LeaseContext.bind(lease);
                Connection c = ds.getConnection()) {
              c.setAutoCommit(false);
              FencingConnection fc = c.unwrap(FencingConnection.class);
              SQLException e;
              if (prepared) {
                PreparedStatement ps =
                    c.prepareStatement("INSERT INTO " + side + " (id) VALUES (?)");
                ps.setInt(1, id);
                e = assertThrows(SQLException.class, ps::executeUpdate);
              } else {
                e =
                    assertThrows(
                        SQLException.class,
                        () ->
                            c.createStatement()
                                .executeUpdate(
                                    "INSERT INTO " + side + " (id) VALUES (" + id + ")"));
              }
              state = e.getSQLState();
              carried = fc.fence.piggybacked();
              c.rollback();
            }
            String what = refusal + (prepared ? " prepared" : " plain");
            assertEquals(LeaseLostSQLException.REFUSED, state, what);
            assertEquals(1, carried, what);
            int ran;
            try (Connection c = f.pool.getConnection();
                ResultSet rs =
                    c.createStatement()
                        .executeQuery("SELECT COUNT(*) FROM " + side + " WHERE id = " + id)) {
              rs.next();
              ran = rs.getInt(1);
            }
            assertEquals(
                refusal == Refusal.SERVER ? 0 : 1,
                ran,
                what + ": the statement ran in the server only when the verify did not fail there");
          }
        }
      } finally {
        TestDatabase.dropQuietly(f.pool, side);
      }
    }
  }

  /**
   * Negative control: a fence that sends the combined text but ignores the verify's empty result
   * commits the stale holder's write, and the refusal test above would catch it.
   */
  @OnMySqlFamily
  void negativeControlIgnoringTheCarriedVerifysEmptyResultCommitsTheWrite(TestDatabase db)
      throws Exception {
    try (Fixture f = multi(db)) {
      for (boolean prepared : new boolean[] {false, true}) {
        FencedDataSource ds =
            f.fenced(
                // the server no longer refuses the text
                WeakenedFence.weaken(
                        f.options(),
                        WeakenedFence.PREVIOUS_REFUSAL,
                        WeakenedFence.PIGGYBACK_IGNORES_REFUSAL)
                    .build());
        Outcome o = refusedAheadOfWrite(f, ds, prepared);
        assertEquals(1, o.piggybacked(), o.toString());
        assertNull(o.first(), o.toString());
        assertEquals(2, o.rows(), "the weakened fence commits the stale writes: " + o);
      }
    }
  }
}
