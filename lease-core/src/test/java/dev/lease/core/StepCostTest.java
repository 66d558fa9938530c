package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.testing.CountingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * What one lease step costs, counted: claim, renew, verify and release are one statement each
 * (where the row exists), counted by the JDBC calls the manager makes ({@link CountingDataSource})
 * and, on MySQL/MariaDB, by the server's own {@code Questions} counter of the one pooled session. A
 * claim that finds the lease held is one statement on PostgreSQL and SQLite, two on MySQL/MariaDB
 * (their UPDATE count cannot tell a held row from a missing one), and then one more: the adoption
 * of a lease transferred to this instance (issue 23). Negative control: the old multi-statement
 * lease session (STEP_IN_SESSION) is caught by the same counts.
 */
class StepCostTest {

  private static final LeaseTimings TIMINGS = Fixture.timings(20_000, 2_000, 10_000, 5_000, 1_000);

  @OnEveryDatabase
  void claimRenewVerifyReleaseAreOneStatementEach(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      Map<String, long[]> costs = costs(f, null);
      for (String step : new String[] {"claim", "renew", "verify", "release"}) {
        assertEquals(1, costs.get(step)[0], db + ": JDBC statements of " + step);
        assertEquals(1, costs.get(step)[1], db + ": JDBC calls reaching the server of " + step);
        if (costs.get(step)[2] >= 0) {
          assertEquals(1, costs.get(step)[2], db + ": server-counted statements of " + step);
        }
      }
      // the claim, then (issue 23) the adoption of a transfer to this instance
      long refused = mysqlFamily(db) ? 3 : 2;
      assertEquals(refused, costs.get("refused claim")[1], db + ": a claim of a held lease");
      assertTrue(costs.get("first claim")[1] <= 3, db + ": the first claim creates the row");
    }
  }

  /** Negative control: the multi-statement lease session the steps replaced. */
  @OnEveryDatabase
  void theOldMultiStatementSessionIsCaughtByTheSameCount(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      Map<String, long[]> costs = costs(f, WeakenedLifecycle.stepInSession());
      for (String step : new String[] {"claim", "renew", "release"}) {
        assertTrue(
            costs.get(step)[1] > 1,
            db + ": the session costs more than one call per " + step + ": " + costs.get(step)[1]);
      }
    }
  }

  /**
   * Per step: {JDBC statements, JDBC calls that reach the server, server-counted statements (-1
   * where the database has no per-session counter)}.
   */
  private static Map<String, long[]> costs(Fixture f, WeakenedLifecycle fault) throws SQLException {
    HikariDataSource one = f.pool(1);
    CountingDataSource counting = new CountingDataSource(one);
    LeaseManager.Builder b = f.builder(counting, "cost").timings(TIMINGS);
    LeaseManager m = f.build(b, fault);
    Map<String, long[]> costs = new LinkedHashMap<>();
    Lease first = (Lease) measure(f, one, counting, costs, "first claim", () -> m.tryClaim("cost"));
    first.release();
    Lease lease = (Lease) measure(f, one, counting, costs, "claim", () -> m.tryClaim("cost"));
    measure(f, one, counting, costs, "renew", () -> assertTrueAndReturn(lease.renew()));
    measure(f, one, counting, costs, "verify", () -> assertTrueAndReturn(lease.verify()));
    measure(f, one, counting, costs, "refused claim", () -> m.tryClaim("cost").isEmpty());
    measure(
        f,
        one,
        counting,
        costs,
        "release",
        () -> {
          lease.release();
          return true;
        });
    return costs;
  }

  private static boolean assertTrueAndReturn(boolean b) {
    assertTrue(b);
    return b;
  }

  /** Runs {@code action}, records its costs; a claimed lease comes back unwrapped. */
  private static Object measure(
      Fixture f,
      HikariDataSource one,
      CountingDataSource counting,
      Map<String, long[]> costs,
      String step,
      Supplier<?> action)
      throws SQLException {
    long before = questions(f, one);
    counting.reset();
    Object result = action.get();
    long statements = counting.statements();
    long calls = counting.calls();
    long after = questions(f, one);
    // the second SHOW counts itself
    long server = before < 0 ? -1 : after - before - 1;
    costs.put(step, new long[] {statements, calls, server});
    return result instanceof Optional<?> o ? o.orElseThrow() : result;
  }

  private static boolean mysqlFamily(TestDatabase db) {
    return db == TestDatabase.MYSQL || db == TestDatabase.MARIADB;
  }

  /** The server's statement count of the pool's one session; -1 where there is none. */
  private static long questions(Fixture f, HikariDataSource one) throws SQLException {
    if (!mysqlFamily(f.db)) {
      return -1;
    }
    try (Connection c = one.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW SESSION STATUS LIKE 'Questions'")) {
      rs.next();
      return rs.getLong(2);
    }
  }
}
