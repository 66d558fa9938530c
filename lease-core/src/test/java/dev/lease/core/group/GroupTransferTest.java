package dev.lease.core.group;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Fixture;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.dialect.Dialect;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A group moves keys by transfer (issue 23): when a member joins or drains, the members that must
 * give keys hand each one to the member that needs it, in the statement that fences them, and the
 * receiver adopts it at its next pass. The third process of these tests (a manager of another
 * instance on the same table) tries to claim every moved key between the move and the receiver's
 * pass, driven by the test's order of calls, not by timing: with transfers it never wins; with the
 * old release + claim (the negative control) it takes them.
 */
class GroupTransferTest {

  static final int KEYS = 1000;

  @OnEveryDatabase
  void aJoinAndADrainMoveKeysDirectlyToTheMembersThatNeedThem(TestDatabase db) {
    try (GroupWorld w = new GroupWorld(db, KEYS)) {
      GroupWorld.Member a = w.join("a");
      GroupWorld.Member b = w.join("b");
      GroupWorld.Member c = w.join("c");
      w.converge("three members started", LeaseGroupTest.START_PASSES);
      LeaseManager third = w.fixture.manager("third", GroupWorld.TIMINGS);

      // d joins: its first pass announces it
      GroupWorld.Member d = w.join("d");
      d.group.runPass();
      Map<String, Long> termsBefore = terms(w, List.of(a, b, c));

      // pass 1: each of a, b, c moves its surplus to d
      Map<String, String> moved = new HashMap<>();
      for (GroupWorld.Member m : List.of(a, b, c)) {
        GroupPass pass = m.group.runPass();
        assertEquals(
            new HashSet<>(pass.shed()),
            pass.moved().keySet(),
            db + ": " + m + " transferred every key it shed: " + pass);
        moved.putAll(pass.moved());
      }
      assertEquals(KEYS / 4, moved.size(), db + ": keys moved to the newcomer");
      assertEquals(Set.of(d.group.member()), new HashSet<>(moved.values()), db + ": all to d");
      assertNobodyElseCanClaim(w, third, moved, termsBefore);

      // pass 2: d adopts them all, at the term the transfer wrote
      GroupPass adopting = d.group.runPass();
      assertEquals(moved.keySet(), new HashSet<>(adopting.adopted()), db + ": d adopted them");
      assertEquals(List.of(), adopting.claimed(), db + ": nothing left to claim");
      assertTrue(w.fair(), db + ": fair two passes after the join: " + w.counts());
      for (String k : moved.keySet()) {
        assertTrue(d.group.lease(k).orElseThrow().term() > termsBefore.get(k), k);
      }
      System.out.printf("%s: join moved %d keys by transfer: %s%n", db, moved.size(), w.counts());

      // b drains: every key goes to a, c or d in one transfer statement per receiver
      termsBefore = terms(w, List.of(b));
      int before = b.counting.texts().size();
      b.group.drain();
      assertEquals(0, b.held(), db + ": a drained member holds nothing");
      List<String> sent = b.counting.texts().subList(before, b.counting.texts().size());
      long transfers =
          sent.stream().filter(t -> t.contains("SET holder = ?, instance = ?")).count();
      assertTrue(
          transfers >= 1 && transfers <= 3,
          db + ": one transfer statement per receiver, got " + transfers);
      assertEquals(
          0,
          sent.stream().filter(t -> t.contains("SET expires_at_ms = 0")).count(),
          db + ": no release statement in the drain");
      Map<String, String> drained = new HashMap<>();
      for (String k : termsBefore.keySet()) {
        Fixture.Row row = w.fixture.row(k);
        assertEquals(Dialect.TRANSFER_PENDING, row.holder(), db + ": " + k + " is pending");
        assertTrue(row.term() > termsBefore.get(k), db + ": " + k + " at a new term");
        drained.put(k, row.instance());
      }
      assertFalse(drained.containsValue("b"), db + ": nothing transferred to the drained member");
      assertNobodyElseCanClaim(w, third, drained, termsBefore);

      // one pass of the peers: each adopts what was transferred to it
      w.round();
      assertTrue(w.fair(), db + ": fair one pass after the drain: " + w.counts());
      for (Map.Entry<String, String> e : drained.entrySet()) {
        GroupWorld.Member to =
            w.members.stream().filter(m -> m.name.equals(e.getValue())).findFirst().orElseThrow();
        assertTrue(to.group.lease(e.getKey()).isPresent(), e + " adopted by the named member");
      }
      System.out.printf(
          "%s: drain moved %d keys by transfer: %s%n", db, drained.size(), w.counts());
      w.assertNoViolations();
    }
  }

  /**
   * Negative control: the same join and drain moving keys by release + claim ({@code
   * MOVE_BY_RELEASE}, as before issue 23): the third process, claiming between the move and the
   * receiver's pass, takes the keys.
   */
  @OnEveryDatabase
  void movingKeysByReleaseAndClaimLetsAThirdProcessTakeThem(TestDatabase db) {
    int keys = 120;
    try (GroupWorld w = new GroupWorld(db, keys)) {
      List<GroupWorld.Member> abc = new ArrayList<>();
      for (String name : List.of("a", "b", "c")) {
        abc.add(w.join(name, WeakenedGroup.MOVE_BY_RELEASE));
      }
      w.converge("three members started", LeaseGroupTest.START_PASSES);
      LeaseManager third = w.fixture.manager("third", GroupWorld.TIMINGS);
      GroupWorld.Member d = w.join("d", WeakenedGroup.MOVE_BY_RELEASE);
      d.group.runPass();
      List<String> shed = new ArrayList<>();
      for (GroupWorld.Member m : abc) {
        GroupPass pass = m.group.runPass();
        assertEquals(Map.of(), pass.moved(), db + ": nothing transferred");
        shed.addAll(pass.shed());
      }
      assertEquals(keys / 4, shed.size(), db + ": keys shed for the newcomer");
      int taken = 0;
      for (String k : shed) {
        Lease l = third.tryClaim(k).orElse(null);
        if (l != null) {
          taken++;
        }
      }
      assertTrue(taken > 0, db + ": negative control not caught: the third process took nothing");
      System.out.printf(
          "%s: release + claim let a third process take %d of %d keys of a join%n",
          db, taken, shed.size());

      Set<String> ofB = new HashSet<>(abc.get(1).group.held());
      abc.get(1).group.drain();
      int takenOfDrain = 0;
      for (String k : ofB) {
        if (third.tryClaim(k).isPresent()) {
          takenOfDrain++;
        }
      }
      assertTrue(takenOfDrain > 0, db + ": negative control not caught in the drain");
    }
  }

  /**
   * A receiver that never adopts (killed after it announced itself): the keys transferred to it
   * expire after the adoption bound (one lease duration) and the others claim them as usual.
   */
  @OnEveryDatabase
  void keysTransferredToAReceiverThatNeverAdoptsExpireAndAreClaimed(TestDatabase db) {
    int keys = 120;
    try (GroupWorld w = new GroupWorld(db, keys)) {
      List<GroupWorld.Member> abc = new ArrayList<>();
      for (String name : List.of("a", "b", "c")) {
        abc.add(w.join(name));
      }
      w.converge("three members started", LeaseGroupTest.START_PASSES);
      GroupWorld.Member d = w.join("d");
      d.group.runPass();
      Map<String, String> moved = new HashMap<>();
      for (GroupWorld.Member m : abc) {
        moved.putAll(m.group.runPass().moved());
      }
      assertEquals(keys / 4, moved.size(), db + ": moved to d");
      d.kill();
      Fixture.await(
          "the keys transferred to the killed member to come back",
          Duration.ofSeconds(30),
          () -> {
            w.round();
            return w.fair();
          });
      Map<String, String> live = w.liveHoldersInDatabase();
      for (String k : moved.keySet()) {
        assertTrue(
            List.of("a", "b", "c").contains(live.get(k)), k + " claimed again: " + live.get(k));
      }
      w.assertNoViolations();
    }
  }

  /** The third process tries every moved key: each is refused, and its row is untouched. */
  private static void assertNobodyElseCanClaim(
      GroupWorld w, LeaseManager third, Map<String, String> moved, Map<String, Long> termsBefore) {
    for (String k : moved.keySet()) {
      assertTrue(third.tryClaim(k).isEmpty(), w.fixture.db + ": a third process claimed " + k);
      Fixture.Row row = w.fixture.row(k);
      assertEquals(Dialect.TRANSFER_PENDING, row.holder(), k + " still pending");
      assertTrue(row.term() > termsBefore.get(k), k + " at a new term");
    }
  }

  /** The term of every key the members hold now. */
  private static Map<String, Long> terms(GroupWorld w, List<GroupWorld.Member> members) {
    Map<String, Long> terms = new HashMap<>();
    for (GroupWorld.Member m : members) {
      for (String k : m.group.held()) {
        m.group.lease(k).ifPresent(l -> terms.put(k, l.term()));
      }
    }
    return terms;
  }
}
