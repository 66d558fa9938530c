package dev.lease.core.group;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Fixture;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;

/** The group's own thread, candidates that change, drain, close and the close order. */
class LeaseGroupLifecycleTest {

  static final Duration WAIT = Duration.ofSeconds(20);

  /** Records the callbacks of one member. */
  static final class Calls implements GroupCallbacks {
    final Set<String> held = ConcurrentHashMap.newKeySet();
    final List<String> events = new CopyOnWriteArrayList<>();

    @Override
    public void onAcquired(String key, Lease lease) {
      held.add(key);
    }

    @Override
    public void onReleasing(String key) {
      held.remove(key);
      events.add("releasing " + key);
    }

    @Override
    public void onLost(String key) {
      held.remove(key);
      events.add("lost " + key);
    }
  }

  static List<String> keys(int n) {
    return IntStream.range(0, n).mapToObj(i -> "k" + i).toList();
  }

  LeaseGroup group(Fixture f, String instance, Calls calls, List<String> candidates) {
    LeaseManager m = f.manager(instance, GroupWorld.TIMINGS);
    return f.track(
        LeaseGroup.builder(m, "life")
            .keys(() -> new ArrayList<>(candidates))
            .callbacks(calls)
            .passInterval(Duration.ofMillis(50))
            .createTableIfMissing()
            .build());
  }

  @OnEveryDatabase
  void startedMembersShareAndCloseHandsEverythingOverAtOnce(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      List<String> keys = keys(20);
      Calls a = new Calls();
      Calls b = new Calls();
      LeaseGroup ga = group(f, "a", a, keys);
      LeaseGroup gb = group(f, "b", b, keys);
      ga.start();
      gb.start();
      Fixture.await(
          "10 keys each",
          WAIT,
          () -> ga.held().size() == 10 && gb.held().size() == 10 && a.held.size() == 10);
      Thread hook = gb.closeOnShutdown();
      assertTrue(hook.getName().contains("life"));
      gb.close(); // also removes the hook
      assertEquals(10, b.events.size(), "onReleasing for every key: " + b.events);
      assertEquals(Set.of(), gb.held());
      Fixture.await("a takes every key", WAIT, () -> ga.held().size() == 20);
      ga.close();
      for (String k : keys) {
        assertEquals(0, f.row(k).expiresAtMs(), k + " released by the close");
      }
      assertThrows(IllegalStateException.class, ga::start);
    }
  }

  @OnEveryDatabase
  void keysThatAreNoLongerCandidatesAreReleased(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      List<String> candidates = new CopyOnWriteArrayList<>(keys(10));
      Calls a = new Calls();
      LeaseGroup g = group(f, "a", a, candidates);
      g.runPass();
      g.runPass();
      assertEquals(10, g.held().size());
      candidates.removeAll(List.of("k1", "k2", "k3"));
      GroupPass p = g.runPass();
      assertEquals(List.of("k1", "k2", "k3"), p.released());
      assertEquals(7, g.held().size());
      assertEquals(0, f.row("k2").expiresAtMs(), "k2's row was released");
      assertTrue(a.events.containsAll(List.of("releasing k1", "releasing k2", "releasing k3")));
    }
  }

  /**
   * Close order: the manager closed first releases the keys itself; the group reports them lost and
   * refuses to go on.
   */
  @OnEveryDatabase
  void aManagerClosedBeforeItsGroupLeavesTheGroupReportingLossesAndRefusing(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      Calls a = new Calls();
      LeaseGroup g = group(f, "a", a, keys(5));
      g.start();
      Fixture.await("5 keys", WAIT, () -> g.held().size() == 5);
      Lease k0 = g.lease("k0").orElseThrow();
      k0.manager().close();
      assertTrue(k0.isReleased(), "the manager released the key's lease");
      Fixture.await("the group reports its keys lost", WAIT, () -> a.events.size() == 5);
      assertTrue(a.events.stream().allMatch(e -> e.startsWith("lost ")), a.events.toString());
      IllegalStateException e = assertThrows(IllegalStateException.class, g::drain);
      assertTrue(
          e.getMessage().contains("close the group before its LeaseManager"), e.getMessage());
      g.close(); // still fine
      assertEquals(Set.of(), g.held());
    }
  }

  @OnEveryDatabase
  void aDrainedMemberTakesNothingAndIsLeftOutOfTheShare(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      Calls a = new Calls();
      Calls b = new Calls();
      LeaseGroup ga = group(f, "a", a, keys(10));
      LeaseGroup gb = group(f, "b", b, keys(10));
      ga.runPass();
      gb.runPass();
      ga.runPass();
      gb.runPass();
      assertEquals(5, ga.held().size());
      gb.drain();
      assertEquals(Set.of(), gb.held());
      GroupPass pa = ga.runPass();
      assertEquals(1, pa.liveMembers(), "a draining member does not count");
      assertEquals(10, pa.share());
      assertEquals(10, ga.held().size());
      GroupPass pb = gb.runPass();
      assertEquals(0, pb.share());
      assertEquals(List.of(), pb.claimed());
    }
  }
}
