package dev.lease.conformance.sim;

import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.QuickCheck;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.core.Lease;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Deterministic simulation: 2–5 processes with keepers compete for one lease in virtual time while
 * faults hit them (pauses, dropped, delayed and slow requests, database stalls, clock drift and
 * steps, crashes, connections lost mid-transaction). Invariants 1–4 are checked after every step.
 * The database is an in-memory SQLite whose clock is the simulation's true time, so a run is
 * exactly replayable from its seed.
 */
public final class SimulationProperty implements ConformanceProperty {

  public static final String DATABASE = "sqlite (virtual time)";

  private final SimOptions options;

  public SimulationProperty() {
    this(SimOptions.standard());
  }

  public SimulationProperty(SimOptions options) {
    this.options = options;
  }

  @Override
  public String id() {
    return "simulation";
  }

  @Override
  public String summary() {
    return "In virtual time, under pauses, dropped and delayed renewals, database stalls and clock"
        + " drift within the bound, there is one holder per term and no process whose local deadline"
        + " has not passed is anything but the database's current holder (invariants 1–4).";
  }

  /** The faults the generator draws from: everything, the intruder only when one is plugged in. */
  private List<Fault.Kind> kinds() {
    List<Fault.Kind> kinds = new ArrayList<>(Arrays.asList(Fault.Kind.values()));
    if (options.intruder == null) {
      kinds.remove(Fault.Kind.INTRUDE);
    }
    return kinds;
  }

  public Gen<Schedule> schedules(Size size) {
    int slowest = (int) Math.round((options.slowest - 1) * 1000);
    int fastest = (int) Math.round((options.fastest - 1) * 1000);
    int longest = size.pick(6_000, 15_000);
    Gen<Fault.Kind> kind = Generate.pick(kinds());
    return integers()
        .between(2, 5)
        .flatMap(
            n ->
                integers()
                    .between(1_000, longest)
                    .flatMap(
                        duration -> {
                          Gen<Fault> fault =
                              integers()
                                  .between(0, duration)
                                  .zip(
                                      kind,
                                      integers().between(0, n - 1),
                                      integers().between(-3_000, 3_000),
                                      Fault::new);
                          return integers()
                              .all()
                              .zip(
                                  lists().of(integers().between(slowest, fastest)).ofSize(n),
                                  lists().of(fault).ofSizeBetween(0, size.pick(12, 25)),
                                  (seed, rates, faults) ->
                                      new Schedule(seed, duration, rates, faults));
                        }));
  }

  @Override
  public PropertyResult check(Target target, Size size, long seed, Progress progress) {
    long started = System.nanoTime();
    long[] tried = new long[2];
    QuickCheck.Falsified f;
    try (SimWorld world = new SimWorld(options)) {
      f =
          QuickCheck.run(
              seed,
              size.pick(600, 3_000),
              size.pick(400, 2_000),
              schedules(size),
              s -> {
                String v = run(world, s);
                tried[0]++;
                tried[1] += world.faults;
                if (tried[0] % 100 == 0) {
                  progress.update(tried[0], tried[1]);
                }
                return v == null;
              });
      String failure = null;
      if (f != null) {
        failure = describe(world, f);
      }
      return new PropertyResult(
          id(),
          DATABASE,
          tried[0],
          tried[1],
          f == null ? 0 : 1,
          failure,
          null,
          (System.nanoTime() - started) / 1_000_000);
    }
  }

  /** Replays the shrunk schedule to tell what broke and show the last steps before it. */
  private String describe(SimWorld world, QuickCheck.Falsified f) {
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
    if (f.smallest() instanceof Schedule shrunk) {
      Schedule s = withoutNeedlessFaults(world, shrunk);
      if (s != shrunk) {
        b.append("without the faults it does not need: ").append(s).append('\n');
      }
      String v = run(world, s);
      b.append("violation: ").append(v).append('\n').append("last steps:\n");
      for (String line : world.trace()) {
        b.append("    ").append(line).append('\n');
      }
    }
    return b.toString();
  }

  /**
   * QuickTheories shrinks the values it drew, which leaves harmless faults in the list; dropping
   * each fault the failure does not need (the run is deterministic) leaves the schedule a human
   * reads.
   */
  private Schedule withoutNeedlessFaults(SimWorld world, Schedule s) {
    Schedule best = s;
    for (int i = best.faults().size() - 1; i >= 0; i--) {
      List<Fault> fewer = new ArrayList<>(best.faults());
      fewer.remove(i);
      Schedule candidate =
          new Schedule(best.seed(), best.durationMs(), best.ratesPerMille(), fewer);
      if (run(world, candidate) != null) {
        best = candidate;
      }
    }
    return best;
  }

  /** Runs one schedule; returns the first violation, or null. */
  public String run(SimWorld world, Schedule s) {
    List<Double> rates = new ArrayList<>();
    for (int r : s.ratesPerMille()) {
      rates.add(1 + r / 1000.0);
    }
    world.start(rates);
    Random random = new Random(s.seed());
    for (SimProcess p : world.processes) {
      worker(world, p, random, random.nextInt(300));
    }
    for (Fault fault : s.faults()) {
      world.loop.schedule(null, fault.atMs() * 1_000_000L, () -> inject(world, fault));
    }
    world.loop.runUntil(s.durationMs() * 1_000_000L, world::check);
    world.checkBusinessTable();
    return world.violation();
  }

  /**
   * A process's worker: every 50–350 ms of its own clock it claims the lease if it has none (and
   * keeps it with the keeper), or works under it: mostly business transactions, sometimes a verify,
   * rarely a release.
   */
  private void worker(SimWorld world, SimProcess p, Random random, int firstDelayMs) {
    p.scheduler.schedule(
        () -> {
          Lease lease = p.lease();
          if (lease == null || !lease.isHeld()) {
            if (world.claim(p) == SimWorld.Outcome.OK) {
              p.lease().hold();
            }
          } else {
            int r = random.nextInt(100);
            if (r < 60) {
              world.transaction(p, p.failMidway);
              p.failMidway = false;
            } else if (r < 75) {
              world.verify(p);
            } else if (r < 79) {
              world.release(p);
            }
          }
          worker(world, p, random, 50 + random.nextInt(300));
        },
        firstDelayMs,
        TimeUnit.MILLISECONDS);
  }

  private void inject(SimWorld world, Fault f) {
    SimProcess p = world.processes.get(f.process() % world.processes.size());
    int amount = Math.abs(f.amount());
    world.faults++;
    world.note("fault " + f);
    switch (f.kind()) {
      case PAUSE -> {
        p.paused = true;
        world.loop.schedule(
            null,
            amount * 1_000_000L,
            () -> {
              p.paused = false;
              world.note(p + " resumed");
            });
      }
      case DROP -> p.dropNext += amount % 4 + 1;
      case DELAY -> {
        p.delayNext = 2;
        p.delayNanos = amount * 1_000_000L;
      }
      case SLOW_REPLY -> {
        p.slowReplyNext = 2;
        p.slowReplyNanos = amount * 1_000_000L;
      }
      case STALL ->
          world.stallUntil = Math.max(world.stallUntil, world.loop.now + amount * 1_000_000L);
      case DRIFT ->
          p.clock.rate(
              Math.max(options.slowest, Math.min(options.fastest, 1 + f.amount() / 1000.0)));
      case JUMP -> p.clock.jump(f.amount() * 1_000_000L);
      case CRASH -> p.crashed = true;
      case FAIL_MIDWAY -> p.failMidway = true;
      case INTRUDE -> world.intrude();
    }
  }
}
