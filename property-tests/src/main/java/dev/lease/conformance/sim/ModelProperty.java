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
import dev.lease.core.Lease;
import dev.lease.core.dialect.Dialect;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Model-based test: generated command sequences (claim, renew, release, verify, business
 * transaction through lease-jdbc, advance time, skew or drift a process clock, step the database
 * clock, drop a request, pause, resume) run against lease-core and against {@link ReferenceModel};
 * every outcome, the lease row and every process's lease state must agree after every step, and
 * invariants 1, 2 and 4 must hold. QuickTheories shrinks a failure to the shortest sequence.
 */
public final class ModelProperty implements ConformanceProperty {

  static final int PROCESSES = 3;

  private final String id;
  private final SimOptions options;

  public ModelProperty() {
    this("model", SimOptions.standard());
  }

  /** The model against a lease-core broken by {@code options}' mutation (negative control). */
  ModelProperty(String id, SimOptions options) {
    this.id = id;
    this.options = options;
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public String headline() {
    return "Generated sequences of lease operations give the reference model's outcomes, rows and states.";
  }

  @Override
  public String summary() {
    return "Generated sequences of claim, renew, release, verify, fenced transaction, transfer to"
        + " another process (adopted by its claim), time, clock skew and drift, database clock"
        + " steps, dropped requests, pause and resume give the"
        + " outcomes, lease row and lease states of the reference model.";
  }

  @Override
  public String countsAsATest() {
    return "takeovers of an expired lease, claims refused while the lease is held, transactions"
        + " committed and refused by the database, leases given up at the local deadline,"
        + " database clock steps, transfers and their adoptions";
  }

  @Override
  public List<NegativeControl> controls() {
    return List.of(
        NegativeControl.of(
            "model/claim-ignores-expiry",
            Mutation.CLAIM_IGNORES_EXPIRY.breaks(),
            new ModelProperty(
                "model/claim-ignores-expiry",
                SimOptions.standard().mutation(Mutation.CLAIM_IGNORES_EXPIRY))));
  }

  public Gen<List<Command>> commands(Size size) {
    List<Command.Kind> weighted = new ArrayList<>();
    for (Command.Kind k : Command.Kind.values()) {
      int weight =
          switch (k) {
            case CLAIM, RENEW, TRANSACTION -> 3;
            case ADVANCE -> 4;
            case VERIFY, DATABASE_CLOCK_STEP -> 2;
            default -> 1;
          };
      weighted.addAll(Collections.nCopies(weight, k));
    }
    Gen<Command> command =
        Generate.pick(weighted)
            .zip(
                integers().between(0, PROCESSES - 1),
                integers().between(0, 1_500),
                (kind, p, amount) ->
                    new Command(
                        kind,
                        p,
                        switch (kind) {
                          case DRIFT -> amount % 201 - 100;
                          case DATABASE_CLOCK_STEP -> amount * 2 - 1_500;
                          case TRANSFER -> amount % PROCESSES;
                          default -> amount;
                        }));
    return lists().of(command).ofSizeBetween(1, size.pick(60, 150));
  }

  /** What lease-core did over all sequences: the events the run must have seen. */
  static final class Counts {
    long takeovers;
    long claimsRefused;
    long committed;
    long databaseSteps;
    long transfers;
    long adoptions;
  }

  @Override
  public PropertyResult check(Target target, Size size, long seed, Progress progress) {
    long started = System.nanoTime();
    long[] tried = new long[2];
    // the first failing sequence's own disagreement: the shrunk one's replay below may pass if the
    // failure depended on something outside the commands (it did once: real time, now virtual)
    String[] firstFailure = new String[1];
    Counts counts = new Counts();
    try (SimWorld world = new SimWorld(options)) {
      QuickCheck.Falsified f =
          QuickCheck.run(
              seed,
              size.pick(1_500, 8_000),
              size.pick(500, 2_000),
              commands(size),
              cmds -> {
                tried[0]++;
                tried[1] +=
                    cmds.stream()
                        .filter(
                            c ->
                                c.kind() == Command.Kind.DROP
                                    || c.kind() == Command.Kind.PAUSE
                                    || c.kind() == Command.Kind.SKEW
                                    || c.kind() == Command.Kind.DRIFT
                                    || c.kind() == Command.Kind.DATABASE_CLOCK_STEP)
                        .count();
                if (tried[0] % 250 == 0) {
                  progress.update(tried[0], tried[1]);
                }
                String why = run(world, cmds, counts);
                if (why != null && firstFailure[0] == null) {
                  firstFailure[0] = why;
                }
                return why == null;
              });
      String failure = null;
      if (f != null) {
        StringBuilder b =
            new StringBuilder(
                "seed "
                    + f.seed()
                    + " (replay: --seed "
                    + f.seed()
                    + "), falsified after "
                    + f.examples()
                    + " sequences\nshrunk sequence:\n");
        if (f.smallest() instanceof List<?> cmds) {
          for (Object c : cmds) {
            b.append("    ").append(c).append('\n');
          }
          @SuppressWarnings("unchecked")
          List<Command> replay = (List<Command>) cmds;
          String replayed = run(world, replay, new Counts());
          b.append("disagreement: ")
              .append(
                  replayed != null
                      ? replayed
                      : "none when replayed (the failure did not replay: it depended on more than"
                          + " the commands)")
              .append('\n');
        }
        if (firstFailure[0] != null) {
          b.append("first failing sequence (before shrinking): ")
              .append(firstFailure[0])
              .append('\n');
        }
        if (f.cause() != null) {
          b.append("threw: ").append(f.cause()).append('\n');
        }
        failure = b.toString();
      }
      // about a third of the fewest seen over many seeds (quick: 1,064–1,207 takeovers, 1,688–1,812
      // refused claims, 528–601 commits, 31–40 refused by the database, 766–820 local deadlines,
      // 3,761–4,037 clock steps), five times that for the full size
      int k = size.pick(1, 5);
      SimWorld.Stats s = world.stats;
      return new PropertyResult(
          id,
          SimulationProperty.DATABASE,
          tried[0],
          tried[1],
          List.of(
              new Count("takeovers of an expired lease", counts.takeovers, 300L * k),
              new Count("claims refused while the lease is held", counts.claimsRefused, 500L * k),
              new Count("transactions committed", counts.committed, 150L * k),
              new Count("transactions refused by the database", s.refusedByDatabase, 10L * k),
              new Count(
                  "leases given up at the local deadline",
                  s.leasesLostAtTheLocalDeadline,
                  250L * k),
              new Count("database clock steps", counts.databaseSteps, 1000L * k),
              // one seed (quick): 186 transfers, 34 adopted (issue 23)
              new Count("transfers", counts.transfers, 50L * k),
              new Count("transfers adopted by their successor", counts.adoptions, 8L * k)),
          f == null ? 0 : 1,
          failure,
          world.mutations.isEmpty()
              ? null
              : "mutated statements and calls: " + world.mutations.hits(),
          (System.nanoTime() - started) / 1_000_000);
    }
  }

  /** Runs one sequence; returns the first disagreement or invariant violation, or null. */
  String run(SimWorld world, List<Command> commands, Counts counts) {
    world.start(Collections.nCopies(PROCESSES, 1.0), 0);
    ReferenceModel model =
        new ReferenceModel(
                PROCESSES,
                world.timings.leaseDuration().toMillis(),
                world.timings.localDeadline().toNanos())
            .environment(
                world.processes.stream().map(q -> q.clock).toList(),
                () -> world.loop.now,
                world.timings.renewInterval().toNanos());
    Map<String, String> tokenOf = new HashMap<>();
    for (int i = 0; i < commands.size(); i++) {
      Command c = commands.get(i);
      SimProcess p = world.processes.get(c.process());
      boolean heldBefore = model.term > 0;
      SimWorld.Outcome expected = model.apply(c, world.dbNowMs(), p.clock.nanoTime());
      SimWorld.Outcome actual = apply(world, p, c);
      String step = "step " + (i + 1) + " (" + c + "): ";
      if (expected != actual) {
        return step + "the model expected " + expected + ", lease-core did " + actual;
      }
      count(c, actual, heldBefore, counts);
      if (c.kind() == Command.Kind.CLAIM && actual == SimWorld.Outcome.OK) {
        tokenOf.put(model.holder, p.lease().holder());
      }
      SimDatabase.Row row = world.row();
      String modelHolder =
          model.holder.isEmpty()
              ? ""
              : model.holder.equals(ReferenceModel.PENDING)
                  ? Dialect.TRANSFER_PENDING
                  : tokenOf.get(model.holder);
      if (row.term() != model.term
          || row.expiresAtMs() != model.expiresAtMs
          || !row.holder().equals(modelHolder)) {
        return step
            + "the lease row is term "
            + row.term()
            + " expiring at "
            + row.expiresAtMs()
            + ", the model has term "
            + model.term
            + " expiring at "
            + model.expiresAtMs
            + (row.holder().equals(modelHolder) ? "" : " and another holder");
      }
      for (int j = 0; j < PROCESSES; j++) {
        Lease actualLease = world.processes.get(j).lease();
        ReferenceModel.ModelLease modelLease = model.processes.get(j).lease;
        String mismatch = compare(actualLease, modelLease);
        if (mismatch != null) {
          return step + "p" + j + ": " + mismatch;
        }
      }
      world.check();
      if (world.violation() != null) {
        return step + world.violation();
      }
    }
    counts.transfers += model.transfers;
    counts.adoptions += model.adoptions;
    world.checkBusinessTable();
    return world.violation();
  }

  private static void count(Command c, SimWorld.Outcome o, boolean heldBefore, Counts counts) {
    switch (c.kind()) {
      case CLAIM -> {
        if (o == SimWorld.Outcome.OK && heldBefore) {
          counts.takeovers++;
        } else if (o == SimWorld.Outcome.REFUSED) {
          counts.claimsRefused++;
        }
      }
      case TRANSACTION -> {
        if (o == SimWorld.Outcome.OK) {
          counts.committed++;
        }
      }
      case DATABASE_CLOCK_STEP -> counts.databaseSteps++;
      default -> {}
    }
  }

  private static String compare(Lease actual, ReferenceModel.ModelLease model) {
    if (actual == null || model == null) {
      return actual == null && model == null
          ? null
          : "lease-core has " + actual + ", the model has " + (model == null ? "none" : model.term);
    }
    ReferenceModel.State state =
        actual.isLost()
            ? ReferenceModel.State.LOST
            : actual.isReleased() ? ReferenceModel.State.RELEASED : ReferenceModel.State.HELD;
    if (actual.term() != model.term || state != model.state) {
      return "lease-core has term "
          + actual.term()
          + " "
          + state
          + ", the model has term "
          + model.term
          + " "
          + model.state;
    }
    return null;
  }

  private static SimWorld.Outcome apply(SimWorld world, SimProcess p, Command c) {
    boolean acts =
        switch (c.kind()) {
          case CLAIM, RENEW, RELEASE, VERIFY, TRANSACTION, TRANSFER -> true;
          default -> false;
        };
    if (acts && p.paused) {
      return SimWorld.Outcome.SKIPPED;
    }
    switch (c.kind()) {
      case CLAIM:
        return world.claim(p);
      case RENEW:
        return world.renew(p);
      case VERIFY:
        return world.verify(p);
      case RELEASE:
        return world.release(p);
      case TRANSFER:
        return world.transfer(p, world.processes.get(c.amount()));
      case TRANSACTION:
        return world.transactionNow(p);
      case ADVANCE:
        world.loop.runUntil(world.loop.now + c.amount() * 1_000_000L, world::check);
        return SimWorld.Outcome.OK;
      case SKEW:
        p.clock.jump(c.amount() * 1_000_000L);
        return SimWorld.Outcome.OK;
      case DRIFT:
        p.clock.rate(1 + c.amount() / 1000.0);
        return SimWorld.Outcome.OK;
      case DROP:
        p.dropNext++;
        return SimWorld.Outcome.OK;
      case DATABASE_CLOCK_STEP:
        world.stepDatabaseClock(c.amount());
        return SimWorld.Outcome.OK;
      case PAUSE:
        p.paused = true;
        return SimWorld.Outcome.OK;
      case RESUME:
        p.paused = false;
        return SimWorld.Outcome.OK;
      default:
        throw new IllegalStateException(c.toString());
    }
  }
}
