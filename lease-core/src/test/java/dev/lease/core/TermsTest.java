package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Terms never repeat for a name, even when its row is deleted, the table emptied or dropped and
 * created again: a new row starts at the database clock in milliseconds × 1000. Rows that exist
 * keep their terms. Negative control: rows created at term 0 hand out term 1 again.
 */
class TermsTest {

  private static final LeaseTimings TIMINGS = Fixture.timings(10_000, 1_000, 5_000, 1_000, 300);

  static Stream<TestDatabase> databases() {
    return TestDatabase.all();
  }

  private static LeaseManager manager(Fixture f, String instance, WeakenedSql fault) {
    LeaseManager.Builder b = f.builder(f.pool(2), instance).timings(TIMINGS);
    if (fault != null) {
      fault.applyTo(b);
    }
    return f.track(b.build());
  }

  /** Claims and releases {@code name} {@code times} times; returns the last term. */
  private static long handOver(LeaseManager m, String name, int times) {
    long term = -1;
    for (int i = 0; i < times; i++) {
      Lease lease = m.tryClaim(name).orElseThrow();
      assertTrue(lease.term() > term, "terms grow");
      term = lease.term();
      lease.release();
    }
    return term;
  }

  /**
   * Waits (deadline 5 s) until the database clock has passed the millisecond {@code term} was
   * handed out in. The mechanism's documented bound: a row created again starts above its earlier
   * incarnation's terms unless that one saw more than 1000 hand-overs per millisecond of its life;
   * a row created, claimed and deleted within one millisecond (SQLite does it) saw one in under a
   * millisecond, so the test keeps to the bound as an application's rows do.
   */
  private static void pastTheMillisecondOf(LeaseManager m, long term) {
    Fixture.await(
        "the database clock to pass " + term / 1000,
        Duration.ofSeconds(5),
        () -> m.databaseTimeMillis() > term / 1000);
  }

  private static void execute(Fixture f, String sql) throws SQLException {
    try (Connection c = f.admin.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  void termsDoNotRepeatWhenTheRowIsDeleted(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = manager(f, "deleting", null);
      long before = handOver(m, "job", 20);
      pastTheMillisecondOf(m, before);
      execute(f, "DELETE FROM " + f.table + " WHERE name = 'job'");
      long after = handOver(m, "job", 1);
      assertTrue(after > before, "term " + after + " after the delete, " + before + " before");

      LeaseManager broken = manager(f, "from-zero", WeakenedSql.termFromZero());
      long brokenBefore = handOver(broken, "zero", 3);
      execute(f, "DELETE FROM " + f.table + " WHERE name = 'zero'");
      long brokenAfter = handOver(broken, "zero", 1);
      assertEquals(1, brokenAfter, "negative control: a row created at term 0 starts again");
      assertTrue(brokenAfter <= brokenBefore, "so the test above would catch a repeated term");
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  void termsDoNotRepeatWhenTheTableIsEmptiedOrDroppedAndCreatedAgain(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = manager(f, "emptying", null);
      long first = handOver(m, "job", 5);
      pastTheMillisecondOf(m, first);
      execute(f, "DELETE FROM " + f.table);
      long second = handOver(m, "job", 1);
      assertTrue(second > first, "after emptying the table: " + second + " > " + first);
      pastTheMillisecondOf(m, second);
      execute(f, "DROP TABLE " + f.table);
      for (String ddl : LeaseManager.ddl(Fixture.database(db), f.table)) {
        execute(f, ddl);
      }
      long third = handOver(m, "job", 1);
      assertTrue(third > second, "after dropping the table: " + third + " > " + second);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  void existingRowsKeepTheirTerms(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      try (Connection c = f.admin.getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO "
                      + f.table
                      + " (name, term, expires_at_ms) VALUES ('old', 41, 0)")) {
        ps.executeUpdate();
        if (!c.getAutoCommit()) {
          c.commit();
        }
      }
      LeaseManager m = manager(f, "keeper", null);
      assertEquals(42, m.tryClaim("old").orElseThrow().term(), "a row of an earlier version");
    }
  }
}
