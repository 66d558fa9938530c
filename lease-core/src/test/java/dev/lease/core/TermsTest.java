package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;

/**
 * Terms never repeat for a name, even when its row is deleted, the table emptied or dropped and
 * created again, or a claim was lost with a failover: a new row starts at the database clock in
 * microseconds, and a hand-over writes {@code max(term + 1, clock in µs)}. Rows of an earlier
 * version keep their terms as the floor. Negative controls: terms counted from 0 without the clock
 * hand out term 1 again after a delete; the + 1 rule alone grants a lost claim's term again.
 */
class TermsTest {

  private static final LeaseTimings TIMINGS = Fixture.timings(10_000, 1_000, 5_000, 1_000, 300);

  private static LeaseManager manager(Fixture f, String instance, WeakenedSql fault) {
    return f.build(f.builder(f.pool(2), instance).timings(TIMINGS), fault);
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
   * handed out in. The mechanism's documented bound: a term is the database clock in µs at its
   * hand-over (SQLite: ms × 1000), so a row created again, or a claim granted again after a
   * failover, gets a larger one once the clock has moved on; within the same millisecond on SQLite
   * it need not, so the test keeps to the bound as an application's rows do.
   */
  private static void pastTheMillisecondOf(LeaseManager m, long term) {
    Fixture.await(
        "the database clock to pass " + term / 1000,
        Duration.ofSeconds(5),
        () -> m.databaseTimeMillis() > term / 1000);
  }

  @OnEveryDatabase
  void termsDoNotRepeatWhenTheRowIsDeleted(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = manager(f, "deleting", null);
      long before = handOver(m, "job", 20);
      pastTheMillisecondOf(m, before);
      f.update("DELETE FROM " + f.table + " WHERE name = 'job'");
      long after = handOver(m, "job", 1);
      assertTrue(after > before, "term " + after + " after the delete, " + before + " before");

      LeaseManager broken = manager(f, "from-zero", WeakenedSql.termFromZero());
      long brokenBefore = handOver(broken, "zero", 3);
      f.update("DELETE FROM " + f.table + " WHERE name = 'zero'");
      long brokenAfter = handOver(broken, "zero", 1);
      assertEquals(1, brokenAfter, "negative control: a row created at term 0 starts again");
      assertTrue(brokenAfter <= brokenBefore, "so the test above would catch a repeated term");
    }
  }

  @OnEveryDatabase
  void termsDoNotRepeatWhenTheTableIsEmptiedOrDroppedAndCreatedAgain(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = manager(f, "emptying", null);
      long first = handOver(m, "job", 5);
      pastTheMillisecondOf(m, first);
      f.update("DELETE FROM " + f.table);
      long second = handOver(m, "job", 1);
      assertTrue(second > first, "after emptying the table: " + second + " > " + first);
      pastTheMillisecondOf(m, second);
      f.update("DROP TABLE " + f.table);
      for (String ddl : LeaseManager.ddl(Fixture.database(db), f.table)) {
        f.update(ddl);
      }
      long third = handOver(m, "job", 1);
      assertTrue(third > second, "after dropping the table: " + third + " > " + second);
    }
  }

  /**
   * A failover that lost a claim (the promoted server's history ends before it) puts the row back
   * as it was before the claim: here the row is written back by hand. The next claim must not hand
   * out the lost claim's term again: a fencing token some system outside the database may already
   * have seen with the lost holder.
   */
  @OnEveryDatabase
  void aClaimLostWithAFailoverIsNeverGrantedAgainAtItsTerm(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      long[] terms = lostClaimThenClaimAgain(f, manager(f, "clock", null), "job");
      assertTrue(terms[1] > terms[0], "term " + terms[1] + " after the lost " + terms[0]);

      long[] broken = lostClaimThenClaimAgain(f, manager(f, "plus-one", termPlusOne()), "p1");
      assertEquals(
          broken[0], broken[1], "negative control: the + 1 rule grants the lost term again");
    }
  }

  private static WeakenedSql termPlusOne() {
    return WeakenedSql.termPlusOne();
  }

  /** Claims, loses the claim as a failover would, claims again: {lost term, next term}. */
  private static long[] lostClaimThenClaimAgain(Fixture f, LeaseManager m, String name)
      throws Exception {
    Lease first = m.tryClaim(name).orElseThrow();
    first.release();
    Fixture.Row before = f.row(name);
    Lease lost = m.tryClaim(name).orElseThrow();
    pastTheMillisecondOf(m, lost.term());
    // the promoted server never saw the claim: the row as it was before it
    f.update(
        "UPDATE "
            + f.table
            + " SET holder = ?, instance = ?, term = ?, expires_at_ms = 0 WHERE name = ?",
        before.holder(),
        before.instance(),
        before.term(),
        name);
    Lease next = m.tryClaim(name).orElseThrow();
    return new long[] {lost.term(), next.term()};
  }

  @OnEveryDatabase
  void existingRowsKeepTheirTerms(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      f.update("INSERT INTO " + f.table + " (name, term, expires_at_ms) VALUES ('old', 41, 0)");
      LeaseManager m = manager(f, "keeper", null);
      assertTrue(m.tryClaim("old").orElseThrow().term() > 41, "a row of an earlier version");
    }
  }
}
