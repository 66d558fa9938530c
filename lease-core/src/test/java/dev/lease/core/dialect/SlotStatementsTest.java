package dev.lease.core.dialect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.util.List;

/**
 * The scheduler's slot statements, one by one, on every database: what each may and may not claim
 * or finish. Every matching UPDATE changes a column (term or revision), so the row counts asserted
 * here are right whether a MySQL driver counts found or changed rows.
 */
class SlotStatementsTest extends LeaseTableTest {

  private static final long LEASE_MS = 60_000;

  private void open(TestDatabase db) {
    open(db, 2, "slots");
  }

  /**
   * The term a new row starts at (the database clock in µs): every claim's term is above it (and
   * above the one before: {@code max(term + 1, clock in µs)}, not consecutive).
   */
  private long base;

  private void createRow(String name) {
    base =
        LeaseInternals.execute(
            manager,
            "create",
            c -> {
              dialect.createRow(c, name);
              return dialect.describe(c, name).term();
            });
  }

  private Dialect.SlotClaimed claim(String name, String holder, long instant) {
    return claim(name, holder, instant, true);
  }

  private Dialect.SlotClaimed claim(
      String name, String holder, long instant, boolean requireLater) {
    return LeaseInternals.execute(
        manager,
        "claim",
        c -> dialect.claimSlot(c, name, holder, "i", LEASE_MS, instant, requireLater));
  }

  private Long claimAgain(String name, String holder, long instant, boolean once) {
    return LeaseInternals.execute(
        manager,
        "claim again",
        c -> dialect.claimSlotAgain(c, name, holder, "i", LEASE_MS, instant, once));
  }

  private boolean finish(String name, String holder, long term, long instant, long overrun) {
    return LeaseInternals.execute(
        manager, "finish", c -> dialect.finishSlot(c, name, holder, term, instant, overrun));
  }

  private boolean release(String name, String holder, long term) {
    return LeaseInternals.execute(manager, "release", c -> dialect.release(c, name, holder, term));
  }

  private Dialect.RowState row(String name) {
    return LeaseInternals.execute(manager, "describe", c -> dialect.describe(c, name));
  }

  private Long last(String name) {
    return LeaseInternals.execute(manager, "last", c -> dialect.lastSlot(c, name));
  }

  private Dialect.SlotState state(String name) {
    return LeaseInternals.execute(manager, "states", c -> dialect.slotStates(c, List.of(name)))
        .byName()
        .get(name);
  }

  @OnEveryDatabase
  void aClaimNeedsAFreeNameAndAnInstantLaterThanTheLastThatTheDatabaseClockReached(
      TestDatabase db) {
    open(db);
    createRow("job");
    assertNull(last("job"), "a job that never ran has no last instant");
    long t = manager.databaseTimeMillis() - 10_000;

    Dialect.SlotClaimed first = claim("job", "h1", t);
    assertNotNull(first);
    assertTrue(first.term() > base, "a new term");
    assertNull(first.previousSlotMs());
    assertNull(first.previousUnfinishedMs());
    assertEquals(t, last("job"), "the claim records the instant as the last claimed");
    assertEquals(t, state("job").unfinishedMs(), "and as unfinished");
    assertFalse(state("job").free());

    assertNull(claim("job", "h2", t + 1), "the name is held");
    assertTrue(finish("job", "h1", first.term(), t, t));
    assertTrue(state("job").free(), "finish gives the name back");
    assertNull(state("job").unfinishedMs(), "and records the round ran to its end");

    assertNull(claim("job", "h2", t), "not later than the last on record");
    assertNull(claim("job", "h2", t - 5), "earlier than the last on record");
    long future = manager.databaseTimeMillis() + 60_000;
    assertNull(claim("job", "h2", future), "the database clock has not reached it");

    Dialect.SlotClaimed second = claim("job", "h2", t + 1);
    assertNotNull(second);
    assertTrue(second.term() > first.term(), "a new term");
    assertEquals(second.term(), row("job").term(), "the term the row records");
    assertEquals(t, second.previousSlotMs());
    assertNull(second.previousUnfinishedMs(), "nothing unfinished was given up");
  }

  /** Negative control: without the last-instant check the same instant is claimed twice. */
  @OnEveryDatabase
  void withoutTheLastInstantCheckAnInstantIsClaimedTwice(TestDatabase db) {
    open(db);
    createRow("job");
    long t = manager.databaseTimeMillis() - 10_000;
    Dialect.SlotClaimed first = claim("job", "h1", t);
    assertTrue(finish("job", "h1", first.term(), t, t));
    assertNull(claim("job", "h2", t, true));
    assertNotNull(claim("job", "h2", t, false), "the broken claim takes the instant again");
  }

  @OnEveryDatabase
  void anUnfinishedInstantIsClaimedAgainOnceAndAClaimThatGivesItUpReportsIt(TestDatabase db) {
    open(db);
    createRow("job");
    long t = manager.databaseTimeMillis() - 10_000;
    Dialect.SlotClaimed first = claim("job", "h1", t);
    assertNull(claimAgain("job", "h2", t, true), "not while its holder holds the name");
    assertTrue(
        release("job", "h1", first.term()),
        "the holder dies: the name is free, the instant unfinished");
    assertEquals(t, state("job").unfinishedMs());
    assertNull(state("job").rerunMs());

    assertNull(claimAgain("job", "h2", t + 1, true), "only the unfinished instant itself");
    Long rerunTerm = claimAgain("job", "h2", t, true);
    assertTrue(rerunTerm > first.term(), "claimed again; a new term");
    assertEquals(t, state("job").rerunMs());
    assertTrue(release("job", "h2", rerunTerm), "cut short a second time");

    assertNull(claimAgain("job", "h3", t, true), "claimed again once only");
    Dialect.SlotClaimed later = claim("job", "h3", t + 100);
    assertNotNull(later);
    assertEquals(t, later.previousUnfinishedMs(), "the claim reports the instant it gave up");
    assertEquals(t + 100, state("job").unfinishedMs());
    assertNull(state("job").rerunMs());
  }

  /** Negative control: without the once-only check a twice-cut instant is claimed a third time. */
  @OnEveryDatabase
  void withoutTheOnceCheckAnInstantIsClaimedAgainAndAgain(TestDatabase db) {
    open(db);
    createRow("job");
    long t = manager.databaseTimeMillis() - 10_000;
    Dialect.SlotClaimed first = claim("job", "h1", t);
    release("job", "h1", first.term());
    Long second = claimAgain("job", "h2", t, true);
    assertTrue(second > first.term());
    release("job", "h2", second);
    assertNull(claimAgain("job", "h3", t, true));
    Long third = claimAgain("job", "h3", t, false);
    assertTrue(third != null && third > second, "the broken claim runs it a third time");
  }

  @OnEveryDatabase
  void onlyTheClaimFinishesAndNeverTakesAlongAnInstantTheDatabaseClockHasNotReached(
      TestDatabase db) {
    open(db);
    createRow("job");
    long t = manager.databaseTimeMillis() - 10_000;
    long first = claim("job", "h1", t).term();
    assertFalse(finish("job", "other", first, t, t), "another holder");
    assertFalse(finish("job", "h1", first + 1, t, t), "another term");
    assertFalse(finish("job", "h1", first, t - 1, t), "another instant");
    long future = manager.databaseTimeMillis() + 60_000;
    assertTrue(finish("job", "h1", first, t, future));
    assertEquals(t, last("job"), "an overrun instant in the future is not taken along");
    assertFalse(finish("job", "h1", first, t, t), "finished once");

    long second = claim("job", "h2", t + 1).term();
    assertTrue(finish("job", "h2", second, t + 1, t + 500));
    assertEquals(t + 500, last("job"), "the last overrun instant is the last on record");
    assertNull(claim("job", "h3", t + 400), "so no replica runs an overrun instant late");
    assertNotNull(claim("job", "h3", t + 501));
  }

  /** Plain lease statements leave the slot columns alone: a released round stays unfinished. */
  @OnEveryDatabase
  void theUnfinishedInstantsOfManyJobsAreReadInOneStatement(TestDatabase db) {
    open(db);
    long t = manager.databaseTimeMillis() - 10_000;
    for (String n : List.of("a", "b", "c")) {
      createRow(n);
    }
    assertNotNull(claim("a", "ha", t));
    Dialect.SlotClaimed b = claim("b", "hb", t + 1);
    assertNotNull(b);
    release("b", "hb", b.term());
    Dialect.SlotStates states =
        LeaseInternals.execute(
            manager, "states", c -> dialect.slotStates(c, List.of("a", "b", "c", "missing")));
    long now = manager.databaseTimeMillis();
    assertTrue(Math.abs(now - states.databaseNowMs()) < 60_000, "the database clock came along");
    assertEquals(3, states.byName().size(), "a name without a row is absent");
    assertEquals(new Dialect.SlotState(t, t, null, false), states.byName().get("a"));
    assertEquals(new Dialect.SlotState(t + 1, t + 1, null, true), states.byName().get("b"));
    assertEquals(new Dialect.SlotState(null, null, null, true), states.byName().get("c"));
  }
}
