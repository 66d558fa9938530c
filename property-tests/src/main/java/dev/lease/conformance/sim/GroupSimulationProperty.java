package dev.lease.conformance.sim;

import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.Mutation;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.PropertyResult.Count;
import dev.lease.conformance.QuickCheck;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.group.GroupCallbacks;
import dev.lease.core.group.LeaseGroup;
import dev.lease.core.internal.GroupInternals;
import dev.lease.core.internal.GroupRules;
import dev.lease.core.internal.LeaseInternals;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * {@link LeaseGroup} in virtual time: 2–3 members (real lease-core managers, keepers and groups,
 * passes driven on each process's own clock) share 6–20 keys on a SQLite database while members
 * join, drain, are killed without release, pause, and their clocks drift within the bound. After
 * every event, per key: one holder per term and terms only grow (invariant 1), and every lease
 * whose holder's local deadline has not passed is the database's current holder (invariant 2).
 * After a quiet period long enough for expiries and one shed per pass: every key held, each live
 * member within the fair share ({@code ceil(K / M)}), draining and killed members holding nothing.
 */
public final class GroupSimulationProperty implements ConformanceProperty {

  /** The pass interval of every member, on its own clock. */
  static final long PASS_MS = 100;

  private final String id;
  private final SimOptions options;

  /** Weakened rules of the first member's group (a control), or null. */
  private final GroupRules weakened;

  private final boolean control;

  public GroupSimulationProperty() {
    this("group", SimOptions.standard(), null, false);
  }

  /**
   * The control {@code group/ignores-share}: a member claims every free key, whatever its fair
   * share, and never sheds (the runner's own weakened rules; honoured because the runner is a test
   * JVM).
   */
  private static final GroupRules IGNORES_SHARE =
      new GroupRules() {
        @Override
        public int share(int fairShare, int candidates) {
          return candidates;
        }
      };

  GroupSimulationProperty(String id, SimOptions options, GroupRules weakened, boolean control) {
    this.id = id;
    this.options = options;
    this.weakened = weakened;
    this.control = control;
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public String headline() {
    return "A LeaseGroup keeps one holder per key and term, and shares its keys fairly after a quiet period.";
  }

  @Override
  public String summary() {
    return "In virtual time, members of a LeaseGroup joining, draining, killed without release,"
        + " paused and drifting within the clock bound: per key one holder per term, terms only grow,"
        + " no member whose local deadline has not passed is anything but the database's holder"
        + " (invariants 1–2 per key), and after a quiet period every key is held, each live member"
        + " within the fair share ceil(K / M), drained and killed members holding nothing.";
  }

  @Override
  public String countsAsATest() {
    return "keys taken over from another member, keys moved by transfer and adopted, drains that"
        + " handed keys over, kills of members holding keys, fair-share checks after a quiet period"
        + " with two or more members";
  }

  @Override
  public List<NegativeControl> controls() {
    return List.of(
        NegativeControl.of(
            "group/ignores-share",
            "fair share: a member that claims every free key and never sheds",
            new GroupSimulationProperty(
                "group/ignores-share", SimOptions.standard(), IGNORES_SHARE, true)),
        NegativeControl.of(
            "group/claim-keeps-term",
            "invariant 1: " + Mutation.CLAIM_KEEPS_TERM.breaks() + " (the group's batched claim)",
            new GroupSimulationProperty(
                "group/claim-keeps-term",
                SimOptions.standard().mutation(Mutation.CLAIM_KEEPS_TERM),
                null,
                true)),
        NegativeControl.of(
            "group/claim-ignores-expiry",
            "invariant 2: "
                + Mutation.CLAIM_IGNORES_EXPIRY.breaks()
                + " (the group's batched claim)",
            new GroupSimulationProperty(
                "group/claim-ignores-expiry",
                SimOptions.standard().mutation(Mutation.CLAIM_IGNORES_EXPIRY),
                null,
                true)));
  }

  /** A generated schedule. */
  public record GroupSchedule(
      int keys, int members, int durationMs, List<Integer> ratesPerMille, List<Event> events) {
    @Override
    public String toString() {
      StringBuilder b =
          new StringBuilder(
              "GroupSchedule["
                  + keys
                  + " keys, "
                  + members
                  + " members, clock rates "
                  + ratesPerMille
                  + " per mille, "
                  + durationMs
                  + " ms, "
                  + events.size()
                  + " events");
      for (Event e : events) {
        b.append("\n    ").append(e);
      }
      return b.append("]").toString();
    }
  }

  /** One change at {@code atMs}: to member {@code member} (modulo the members so far). */
  public record Event(int atMs, Kind kind, int member, int amount) {
    @Override
    public String toString() {
      return "at " + atMs + " ms " + kind + " m" + member + " " + amount;
    }
  }

  /** What can happen to the group. */
  public enum Kind {
    /** A new member (a new process) starts. */
    JOIN,
    /** The member drains. */
    DRAIN,
    /** The member's process dies without releasing. */
    KILL,
    /** The member's process stops for {@code amount} ms (its keeper and passes run late). */
    PAUSE,
    /** The member's clock rate changes to 1 + amount/1000, clamped to the allowed range. */
    DRIFT
  }

  Gen<GroupSchedule> schedules(Size size) {
    int slowest = (int) Math.round((options.slowest - 1) * 1000);
    int fastest = (int) Math.round((options.fastest - 1) * 1000);
    List<Kind> weighted = new ArrayList<>(List.of(Kind.values()));
    weighted.add(Kind.JOIN); // keeps the group from dying out
    Gen<Kind> kind = Generate.pick(weighted);
    return integers()
        .between(6, 20)
        .flatMap(
            keys ->
                integers()
                    .between(2, 3)
                    .flatMap(
                        members ->
                            integers()
                                .between(1_000, size.pick(5_000, 10_000))
                                .flatMap(
                                    duration ->
                                        lists()
                                            .of(integers().between(slowest, fastest))
                                            .ofSize(8)
                                            .zip(
                                                lists()
                                                    .of(
                                                        integers()
                                                            .between(0, duration)
                                                            .zip(
                                                                kind,
                                                                integers().between(0, 7),
                                                                integers().between(50, 1_500),
                                                                Event::new))
                                                    .ofSizeBetween(1, size.pick(6, 10)),
                                                (rates, events) ->
                                                    new GroupSchedule(
                                                        keys,
                                                        members,
                                                        duration,
                                                        rates,
                                                        events.stream()
                                                            .sorted(
                                                                (a, b) ->
                                                                    Integer.compare(
                                                                        a.atMs(), b.atMs()))
                                                            .toList())))));
  }

  /** What happened over all schedules: the counts the property asserts. */
  static final class Stats {
    long takeovers;
    long adoptions;
    long drainsThatHandedOver;
    long killsOfHolders;
    long fairChecks;
    long joins;
    long pauses;
    long acquisitions;
  }

  @Override
  public PropertyResult check(Target target, Size size, long seed, Progress progress) {
    long started = System.nanoTime();
    Stats stats = new Stats();
    long[] tried = new long[2];
    QuickCheck.Falsified f;
    try (SimWorld world = new SimWorld(options)) {
      f =
          QuickCheck.run(
              seed,
              size.pick(25, 150) * (control ? 5 : 1),
              size.pick(30, 100),
              schedules(size),
              s -> {
                Run r = new Run(world, s, stats);
                String v = r.run();
                tried[0]++;
                tried[1] += s.events().size();
                if (tried[0] % 5 == 0) {
                  progress.update(tried[0], tried[1]);
                }
                return v == null;
              });
      String failure = null;
      if (f != null) {
        StringBuilder b = new StringBuilder();
        b.append("seed ")
            .append(f.seed())
            .append(" (replay: --seed ")
            .append(f.seed())
            .append("), falsified after ")
            .append(f.examples())
            .append(" schedules\n");
        b.append("shrunk schedule: ").append(f.smallest()).append('\n');
        if (f.cause() != null) {
          b.append("threw: ").append(f.cause()).append('\n');
        }
        if (f.smallest() instanceof GroupSchedule shrunk) {
          Run r = new Run(world, shrunk, new Stats());
          b.append("violation: ").append(r.run()).append('\n').append("last steps:\n");
          for (String line : world.trace()) {
            b.append("    ").append(line).append('\n');
          }
        }
        failure = b.toString();
      }
      int k = size.pick(1, 5);
      return new PropertyResult(
          id,
          SimulationProperty.DATABASE,
          tried[0],
          tried[1],
          List.of(
              new Count("keys taken over from another member", stats.takeovers, 20L * k),
              new Count(
                  "keys moved by transfer and adopted by the member named",
                  stats.adoptions,
                  10L * k),
              new Count("drains that handed keys over", stats.drainsThatHandedOver, 3L * k),
              new Count("kills of members holding keys", stats.killsOfHolders, 3L * k),
              new Count(
                  "fair-share checks after a quiet period with two or more members",
                  stats.fairChecks,
                  10L * k),
              Count.info("keys acquired", stats.acquisitions),
              Count.info("members joined", stats.joins),
              Count.info("pauses", stats.pauses)),
          f == null ? 0 : 1,
          failure,
          world.mutations.isEmpty()
              ? null
              : "mutated statements and calls: " + world.mutations.hits(),
          (System.nanoTime() - started) / 1_000_000);
    }
  }

  /** One schedule on the world's database and event loop. */
  private final class Run {
    final SimWorld world;
    final GroupSchedule schedule;
    final Stats stats;
    final List<Member> members = new ArrayList<>();
    final List<String> keys;
    final Map<String, String> holderOfTerm = new HashMap<>();
    final Map<String, Long> maxTerm = new HashMap<>();
    final Map<String, String> lastHolder = new HashMap<>();
    final Map<String, Long> rowTerm = new HashMap<>();
    String violation;

    Run(SimWorld world, GroupSchedule schedule, Stats stats) {
      this.world = world;
      this.schedule = schedule;
      this.stats = stats;
      this.keys =
          IntStream.range(0, schedule.keys()).mapToObj(i -> String.format("k%02d", i)).toList();
    }

    /** One process running the group. */
    final class Member implements GroupCallbacks {
      final SimProcess process;
      final LeaseManager manager;
      final LeaseGroup group;
      final Map<String, Lease> leases = new HashMap<>();

      /** The group's pass, handed to this simulation's trigger by start(), and its interval. */
      Runnable passOnce;

      long passMs;
      boolean draining;

      Member(int index) {
        long origin = (index * 7_919L - 13_000L) * 1_000_000_000L;
        double rate = 1 + schedule.ratesPerMille().get(index % 8) / 1000.0;
        ProcessClock clock = options.clocks.create(() -> world.loop.now, origin, rate);
        process = new SimProcess(world, index, clock);
        LeaseManager.Builder b =
            LeaseManager.builder(process.dataSource)
                .table(SimDatabase.TABLE)
                .instance(process.instance())
                .timings(options.timings)
                .failurePolicy(FailurePolicy.logOnly())
                .listener(
                    new dev.lease.core.LeaseListener() {
                      @Override
                      public void adopted(Lease lease) {
                        stats.adoptions++; // a peer transferred it to this instance (issue 23)
                      }
                    })
                .createTableIfMissing();
        LeaseInternals.clock(b, clock);
        LeaseInternals.attemptClock(b, () -> world.loop.now); // no real-time attempt timeouts
        LeaseInternals.scheduler(b, process.scheduler);
        LeaseInternals.attemptExecutor(b, Runnable::run);
        LeaseInternals.lossExecutor(b, Runnable::run);
        LeaseInternals.clockFunctionForTesting(b, SimDatabase.CLOCK_FUNCTION);
        manager = b.build();
        LeaseGroup.Builder gb =
            LeaseGroup.builder(manager, "sim")
                .keys(() -> keys)
                .callbacks(this)
                .passInterval(Duration.ofMillis(PASS_MS))
                .createTableIfMissing();
        // the group hands its pass to this trigger at start(); pass() calls it in virtual time
        GroupInternals.passTrigger(
            gb,
            (pass, intervalNanos) -> {
              passOnce = pass;
              passMs = intervalNanos / 1_000_000;
            });
        if (weakened != null && index == 0) {
          GroupInternals.rulesForTesting(gb, weakened);
        }
        group = gb.build();
        group.start();
      }

      @Override
      public void onAcquired(String key, Lease lease) {
        stats.acquisitions++;
        leases.put(key, lease);
        world.note(process + " acquired " + key + " term " + lease.term());
        String before = holderOfTerm.putIfAbsent(key + "@" + lease.term(), lease.holder());
        if (before != null && !before.equals(lease.holder())) {
          violate("invariant 1: " + key + " term " + lease.term() + " acquired twice");
        }
        Long max = maxTerm.get(key);
        if (max != null && lease.term() <= max) {
          violate("invariant 1: " + key + " term " + lease.term() + " acquired after term " + max);
        }
        maxTerm.merge(key, lease.term(), Math::max);
        String last = lastHolder.put(key, process.instance());
        if (last != null && !last.equals(process.instance())) {
          stats.takeovers++;
        }
      }

      @Override
      public void onReleasing(String key) {
        leases.remove(key);
        world.note(process + " releasing " + key);
      }

      @Override
      public void onLost(String key) {
        leases.remove(key);
        world.note(process + " lost " + key);
      }

      boolean alive() {
        return !process.crashed;
      }

      void schedulePass(long delayMs) {
        process.scheduleWork(this::pass, delayMs);
      }

      void pass() {
        if (process.crashed) {
          return;
        }
        try {
          passOnce.run();
        } catch (LeaseException | IllegalStateException e) {
          world.note(process + " pass failed: " + e.getMessage());
        }
        schedulePass(passMs);
      }
    }

    void violate(String what) {
      if (violation == null) {
        violation = what;
        world.note("VIOLATION " + what);
      }
    }

    String run() {
      world.processes.forEach(SimProcess::closeAll);
      world.processes.clear();
      world.loop.clear();
      world.clearTrace();
      try {
        world.db.reset();
        world.db.drop(SimDatabase.TABLE + "_members");
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
      for (int i = 0; i < schedule.members(); i++) {
        join();
      }
      for (Event e : schedule.events()) {
        world.loop.schedule(null, e.atMs() * 1_000_000L, () -> apply(e));
      }
      long quietMs = 3_000 + 150L * schedule.keys();
      long end = (schedule.durationMs() + 1_500 + quietMs) * 1_000_000L;
      try {
        world.loop.runUntil(end, this::check);
        finalCheck();
      } finally {
        for (Member m : members) {
          m.process.closeAll();
        }
      }
      return violation;
    }

    private void join() {
      Member m = new Member(members.size());
      members.add(m);
      m.schedulePass(members.size() * 7L % PASS_MS);
    }

    private List<Member> sharers() {
      return members.stream().filter(m -> m.alive() && !m.draining).toList();
    }

    private void apply(Event e) {
      if (e.kind() == Kind.JOIN) {
        if (members.size() < 8) {
          stats.joins++;
          world.note("join m" + members.size());
          join();
        }
        return;
      }
      Member m = members.get(e.member() % members.size());
      if (!m.alive()) {
        return;
      }
      world.note(e.toString());
      switch (e.kind()) {
        case DRAIN -> {
          if (m.draining || sharers().size() < 2) {
            return;
          }
          m.process.scheduleWork(
              () -> {
                int had = m.group.held().size();
                try {
                  m.group.drain();
                } catch (RuntimeException x) {
                  world.note(m.process + " drain failed: " + x.getMessage());
                }
                m.draining = true;
                if (had > 0 && m.group.held().isEmpty()) {
                  stats.drainsThatHandedOver++;
                }
              },
              0);
        }
        case KILL -> {
          if (sharers().size() < 2 && !m.draining) {
            return;
          }
          if (!m.group.held().isEmpty()) {
            stats.killsOfHolders++;
          }
          m.process.crash();
        }
        case PAUSE -> {
          stats.pauses++;
          m.process.paused = true;
          world.loop.schedule(null, e.amount() * 1_000_000L, () -> m.process.paused = false);
        }
        case DRIFT ->
            m.process.clock.rate(
                Math.max(options.slowest, Math.min(options.fastest, 1 + e.amount() / 1000.0)));
        default -> throw new IllegalStateException(e.kind().name());
      }
    }

    /** Invariants 1 and 2 per key against the database as it is now. */
    private void check() {
      if (violation != null) {
        return;
      }
      Map<String, SimDatabase.Row> rows = rows();
      long now = world.db.nowMs();
      for (Map.Entry<String, SimDatabase.Row> e : rows.entrySet()) {
        Long before = rowTerm.put(e.getKey(), e.getValue().term());
        if (before != null && e.getValue().term() < before) {
          violate("invariant 1: the term of " + e.getKey() + " went back from " + before);
        }
      }
      for (Member m : members) {
        if (m.draining && !m.leases.isEmpty() && !m.process.working) {
          violate("drain: " + m.process + " still holds " + m.leases.keySet() + " after draining");
        }
        for (Map.Entry<String, Lease> e : m.leases.entrySet()) {
          Lease lease = e.getValue();
          Duration left = lease.remaining();
          if (left.isZero()) {
            continue;
          }
          SimDatabase.Row row = rows.get(e.getKey());
          boolean current =
              row != null && row.holder().equals(lease.holder()) && row.term() == lease.term();
          if (!current || row.expiresAtMs() <= now) {
            violate(
                "invariant 2: "
                    + m.process
                    + " believes it holds "
                    + e.getKey()
                    + " term "
                    + lease.term()
                    + " for another "
                    + left.toMillis()
                    + " ms, but the database "
                    + (current
                        ? "let it expire " + (now - row.expiresAtMs()) + " ms ago"
                        : "names term "
                            + (row == null ? "none" : row.term() + " of " + row.instance())));
          }
        }
      }
    }

    /** After the quiet period: every key held by a live sharer, each within the fair share. */
    private void finalCheck() {
      if (violation != null) {
        return;
      }
      List<Member> sharers = sharers();
      int m = sharers.size();
      if (m < 2) {
        return;
      }
      int k = keys.size();
      Set<String> held = new HashSet<>();
      List<Integer> counts = new ArrayList<>();
      for (Member s : members) {
        Set<String> h = s.alive() ? s.group.held() : Set.of();
        if (!sharers.contains(s) && !h.isEmpty()) {
          violate("fair share: " + s.process + " (draining) still holds " + h);
          return;
        }
        held.addAll(h);
        if (sharers.contains(s)) {
          counts.add(h.size());
        }
      }
      int share = (k + m - 1) / m;
      if (held.size() != k || counts.stream().anyMatch(n -> n > share)) {
        violate(
            "fair share: after a quiet period "
                + held.size()
                + " of "
                + k
                + " keys held, by "
                + m
                + " members "
                + counts
                + " (share "
                + share
                + ")");
        return;
      }
      stats.fairChecks++;
    }

    private Map<String, SimDatabase.Row> rows() {
      try {
        return world.db.rows();
      } catch (SQLException e) {
        if (e.getMessage() != null && e.getMessage().contains("no such table")) {
          return Map.of(); // before the first manager created it
        }
        throw new IllegalStateException(e);
      }
    }
  }
}
