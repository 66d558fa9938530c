package dev.lease.core.group;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Fixture;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Three members (threads with separate managers) share 1,000 keys through every change: a member
 * joins, one drains, one is killed without release. Passes are run explicitly, in rounds.
 */
class LeaseGroupTest {

  static final int KEYS = 1000;

  /** Passes for the members that start together: one to announce, one to claim, one spare. */
  static final int START_PASSES = 3;

  /**
   * Passes after a member announced itself (its first pass) until a join is absorbed: the peers
   * release their surplus at their next pass (batched), the newcomer claims it at its next.
   */
  static final int JOIN_PASSES = 2;

  /** Starts the deadlock control may take to see its deadlock. */
  static final int CONTROL_STARTS = 40;

  @OnEveryDatabase
  void membersShareKeysFairlyThroughJoinDrainAndKill(TestDatabase db) {
    try (GroupWorld w = new GroupWorld(db, KEYS)) {
      GroupWorld.Member a = w.join("a");
      GroupWorld.Member b = w.join("b");
      GroupWorld.Member c = w.join("c");
      int rounds = w.converge("three members started", START_PASSES);
      System.out.printf("%s: 3 members converged in %d passes: %s%n", db, rounds, w.counts());

      // a fourth member joins: once it announced, each of the three transfers its surplus (84) to
      // d in its next pass, and d adopts it in its next
      GroupWorld.Member d = w.join("d");
      d.group.runPass();
      rounds = w.converge("a fourth member joined", JOIN_PASSES);
      System.out.printf("%s: 4 members converged in %d passes: %s%n", db, rounds, w.counts());

      // b drains: it hands everything over at once (one transfer statement per peer for its 250
      // keys), its peers adopt them at their next pass
      int lostBefore = w.losses.get();
      int before = b.counting.texts().size();
      b.group.drain();
      assertEquals(0, b.held(), "a drained member holds nothing");
      List<String> sent = b.counting.texts();
      long transfers =
          sent.subList(before, sent.size()).stream()
              .filter(t -> t.contains("SET holder = ?, instance = ?"))
              .count();
      assertTrue(
          transfers >= 1 && transfers <= 3,
          db + ": transfer statements of the drain of 250 keys: " + transfers);
      w.round(); // the peers' next pass sees the flag
      assertFairOrExcused(w, lostBefore, "one pass after the drain the peers hold everything");

      // c is killed without release: its keys are taken within the lease + one pass
      Set<String> ofC = new HashSet<>(c.group.held());
      long killedAt = w.databaseNow();
      c.kill();
      Fixture.await(
          "the database to let c's leases and heartbeat expire",
          Duration.ofSeconds(30),
          () -> {
            w.round(); // the survivors keep passing meanwhile
            Map<String, String> live = w.liveHoldersInDatabase();
            long now = w.databaseNow();
            Long beat = w.heartbeat(c);
            return ofC.stream().noneMatch(k -> "c".equals(live.get(k)))
                && (beat == null || beat <= now - GroupWorld.TIMINGS.leaseDuration().toMillis());
          });
      lostBefore = w.losses.get();
      w.round();
      assertFairOrExcused(
          w, lostBefore, "one pass after the killed member's leases expired its keys are taken");
      long tookMs = w.databaseNow() - killedAt;
      System.out.printf(
          "%s: killed member's %d keys taken %d ms after the kill (lease %d ms): %s%n",
          db, ofC.size(), tookMs, GroupWorld.TIMINGS.leaseDuration().toMillis(), w.counts());

      Map<String, String> live = w.liveHoldersInDatabase();
      for (GroupWorld.Member m : List.of(a, d)) {
        for (String k : m.group.held()) {
          assertEquals(m.name, live.get(k), k + " is held by " + m + " in the database too");
        }
      }
      w.assertNoViolations();
      assertTrue(w.orderingChecks.get() > 250, "onReleasing was checked: " + w.orderingChecks);
    }
  }

  /**
   * The one-pass promise, unless a survivor lost keys meanwhile (renewals late on an overloaded
   * machine: the per-lease keepers of 1,000 leases): then the keys must still come back, timed by
   * {@link GroupWorld#converge}, and the run says so.
   */
  private static void assertFairOrExcused(GroupWorld w, int lostBefore, String what) {
    if (w.fair()) {
      return;
    }
    int lost = w.losses.get() - lostBefore;
    if (lost == 0) {
      throw new AssertionError(what + ": " + w.counts());
    }
    System.out.printf(
        "%s: %s did not hold: %d keys lost meanwhile; %s%n", w.fixture.db, what, lost, w.counts());
    w.converge(what + " (with " + lost + " keys lost)", 3);
  }

  /**
   * Three members start together (their first passes at once), three times over, 1,000 keys: no
   * first pass is refused as a deadlock (MariaDB refused one in 2 of 3 such starts before the
   * announcement became a transaction of its own), and each member is counted by the others before
   * anyone claims, so no member takes more than its share in the claim pass (and the group is fair
   * then, or one pass later when a claim stepped over a key a peer's concurrent claim had locked).
   */
  @OnEveryDatabase
  void membersStartingTogetherAreCountedBeforeAnyoneClaims(TestDatabase db) {
    for (int run = 1; run <= 3; run++) {
      try (GroupWorld w = new GroupWorld(db, KEYS)) {
        w.join("a");
        w.join("b");
        w.join("c");
        w.round(); // every member announces itself
        w.round(); // and claims
        List<String> conflicts =
            w.failures.stream().filter(m -> m.toLowerCase().contains("deadlock")).toList();
        assertEquals(List.of(), conflicts, db + " run " + run + ": passes refused as deadlocks");
        if (w.failures.isEmpty()) {
          // what the promise is about: every member counted the others before it claimed, so
          // none took more than a third of the keys
          int share = (KEYS + 2) / 3;
          for (GroupWorld.Member m : w.members) {
            assertTrue(
                m.held() <= share,
                db + " run " + run + ": above the share after the claim pass: " + w.counts());
          }
          if (!w.fair()) {
            // a claim (SKIP LOCKED) may step over a key a peer's concurrent claim had locked and
            // did not take (seen once on MariaDB: 334/334/331 of 1,000): the next pass takes it
            System.out.printf(
                "%s run %d: short after the claim pass: %s; one more pass%n", db, run, w.counts());
            w.round();
            assertTrue(w.fair(), db + " run " + run + ": fair after one more pass: " + w.counts());
          }
        } else {
          // a pass that timed out on an overloaded machine: the next passes make up for it
          System.out.printf("%s run %d: passes failed: %s%n", db, run, w.failures);
          w.converge("three members started (with failed passes)", START_PASSES);
        }
        w.assertNoViolations();
      }
    }
  }

  /**
   * Negative control of {@link #membersStartingTogetherAreCountedBeforeAnyoneClaims}: the first
   * pass as it was (announcement, range purge and count in one transaction) is refused as a
   * deadlock in some starts on MySQL/MariaDB (PostgreSQL's purge does not wait for an uncommitted
   * insert, SQLite has one writer): the first deadlock ends it, up to {@value #CONTROL_STARTS}
   * starts (whether three passes overlap is up to the machine's scheduler; a busy CI machine needed
   * more than five).
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("mySqlFamily")
  void theFirstPassInOneTransactionDeadlocksWhenMembersStartTogether(TestDatabase db) {
    for (int run = 1; run <= CONTROL_STARTS; run++) {
      try (GroupWorld w = new GroupWorld(db, 10)) {
        for (String name : List.of("a", "b", "c")) {
          w.join(name, WeakenedGroup.FIRST_PASS_IN_ONE_TRANSACTION);
        }
        w.round();
        if (w.failures.stream().anyMatch(m -> m.toLowerCase().contains("deadlock"))) {
          System.out.printf("%s: deadlock in start %d: %s%n", db, run, w.failures.get(0));
          return;
        }
      }
    }
    throw new AssertionError(
        db + ": negative control not caught: no deadlock in " + CONTROL_STARTS + " starts");
  }

  static java.util.stream.Stream<TestDatabase> mySqlFamily() {
    return TestDatabase.all().filter(TestDatabase::isMySqlFamily);
  }

  /**
   * Cautious moves ({@code shedOneKeyPerPass}): a pass sheds one key, so a join takes about {@code
   * ceil(K/3) - ceil(K/4)} passes. Also the negative control of the two-pass bound above: the same
   * convergence check with that bound fails.
   */
  @OnEveryDatabase
  void shedOneKeyPerPassMovesOneKeyPerPassAndMissesTheTwoPassBound(TestDatabase db) {
    int keys = 120;
    try (GroupWorld w = new GroupWorld(db, keys)) {
      for (String name : List.of("a", "b", "c")) {
        w.join(name, null, LeaseGroup.Builder::shedOneKeyPerPass);
      }
      w.converge("three cautious members started", START_PASSES);
      GroupWorld.Member d = w.join("d", null, LeaseGroup.Builder::shedOneKeyPerPass);
      d.group.runPass();
      GroupPass pass = w.members.get(0).group.runPass();
      assertEquals(1, pass.shed().size(), "one key shed in a pass above the share: " + pass);
      AssertionError caught =
          assertThrows(
              AssertionError.class, () -> w.converge("a cautious fourth joined", JOIN_PASSES));
      assertTrue(caught.getMessage().contains("no convergence"), caught.getMessage());
      int excess = (keys + 2) / 3 - keys / 4;
      w.converge("a cautious fourth joined", excess + START_PASSES);
      w.assertNoViolations();
    }
  }

  /** Negative control: a member that ignores the share is caught by the same convergence check. */
  @OnEveryDatabase
  void aGroupThatIgnoresTheShareDoesNotConverge(TestDatabase db) {
    int keys = 300;
    try (GroupWorld w = new GroupWorld(db, keys)) {
      w.join("greedy", WeakenedGroup.IGNORE_SHARE);
      w.converge("one member started", START_PASSES);
      w.join("b");
      w.join("c");
      AssertionError caught =
          assertThrows(
              AssertionError.class, () -> w.converge("two members joined", 2 * START_PASSES));
      assertTrue(caught.getMessage().contains("no convergence"), caught.getMessage());
    }
  }

  @OnEveryDatabase
  void onReleasingReturnsBeforeTheReleaseStatementRuns(TestDatabase db) {
    try (GroupWorld w = new GroupWorld(db, 40)) {
      w.join("a");
      w.converge("one member started", START_PASSES);
      GroupWorld.Member b = w.join("b");
      w.converge("a second member joined", START_PASSES); // a sheds 20 at once
      b.group.drain();
      w.round();
      w.assertNoViolations();
      assertTrue(w.orderingChecks.get() >= 40, "checked: " + w.orderingChecks);
    }
  }

  /** Negative control: a release before the callback is caught by the same check. */
  @OnEveryDatabase
  void aReleaseBeforeTheCallbackIsCaught(TestDatabase db) {
    try (GroupWorld w = new GroupWorld(db, 40)) {
      // the same steps as onReleasingReturnsBeforeTheReleaseStatementRuns, a broken
      w.join("a", WeakenedGroup.RELEASE_BEFORE_CALLBACK);
      w.converge("one member started", START_PASSES);
      GroupWorld.Member b = w.join("b");
      w.converge("a second member joined", START_PASSES); // a sheds 20 at once
      b.group.drain();
      w.round();
      assertTrue(
          w.violations.stream().anyMatch(v -> v.contains("before onReleasing returned")),
          "the ordering violation was detected: " + w.violations);
    }
  }
}
