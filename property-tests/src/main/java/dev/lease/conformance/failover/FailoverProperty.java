package dev.lease.conformance.failover;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.PropertyResult.Count;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.LeaseLostSQLException;
import java.io.IOException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Leases across a failover of the database: holders (separate JVMs, {@link HolderProcess}, each
 * with its own lease manager and HikariCP pools on the multi-host URL, started once per check and
 * driven over a pipe) claim, run STRICT-fenced transactions and hand the lease over; at a generated
 * moment (during a claim, inside a STRICT transaction, between a claim and its first verify) the
 * hook stalls replication for a generated lag, kills the primary and promotes the replica. The
 * holders carry on against whatever the pools reach. Checked afterwards on the promoted server's
 * own history:
 *
 * <ul>
 *   <li>invariant 1 (STRICT): no data row of term t committed after the claim of term t+1 — the
 *       claim's trigger counted the rows of term t it saw, and no more may exist;
 *   <li>every data row was written under a (term, holder) the promoted history granted;
 *   <li>a holder whose claim vanished with the failover learnt it (its lease was lost, with an
 *       event) and wrote nothing the promoted server kept;
 *   <li>on a synchronous pair no acknowledged claim or commit vanished (reported, not required, for
 *       an asynchronous one).
 * </ul>
 *
 * Counted: failovers run, hand-overs lost with the failover (claims acknowledged to a holder that
 * the promoted server does not have), commits lost, time from the kill until a holder commits
 * again, transactions refused, leases held across the failover that were kept or lost.
 */
public final class FailoverProperty implements ConformanceProperty {

  /** Where in the workload the failover starts. */
  public enum Moment {
    /**
     * A holder starts the failover right before it releases: its successor's claim runs while
     * replication is stalled and the primary is being killed.
     */
    DURING_CLAIM,
    INSIDE_STRICT_TRANSACTION,
    BETWEEN_CLAIM_AND_FIRST_VERIFY
  }

  /** A deliberately broken holder, for the negative control. */
  public enum Break {
    NONE,
    /**
     * The holder writes without the fence (no verify) for as long as its own clock says its claim
     * is good (the lease duration counted from the claim), whatever the database says.
     */
    HOLDER_TRUSTS_ITS_CLOCK,
    /**
     * lease-core's claim statement, as the holders' lease pools send it to the driver, keeps the
     * term ({@link dev.lease.conformance.Mutation#CLAIM_KEEPS_TERM}): a hand-over ignores the term
     * history and grants the number its predecessor holds again. Caught on the promoted server's
     * history in every mode, synchronous ones included: rows of the new holder under a term that
     * server granted to another.
     */
    CLAIM_KEEPS_TERM,
    /**
     * lease-core's hand-overs, as the holders' lease pools send them, write term + 1 without the
     * database clock's floor ({@link dev.lease.conformance.Mutation#TERM_PLUS_ONE}): a claim lost
     * with an asynchronous failover leaves its number free on the promoted server, which grants it
     * again to another holder. Caught where claims can vanish (asynchronous replication).
     */
    TERM_PLUS_ONE
  }

  /**
   * Short protocol timings so a round is seconds long; the local deadline (2.5 s) is about as long
   * as a failover here, so some leases live through one and some do not.
   */
  static final LeaseTimings TIMINGS =
      LeaseTimings.builder()
          .leaseDuration(Duration.ofMillis(4000))
          .renewInterval(Duration.ofMillis(300))
          .attemptTimeout(Duration.ofMillis(800))
          .localDeadline(Duration.ofMillis(2500))
          .gracePeriod(Duration.ofMillis(500))
          .build();

  private static final int HOLDERS = 3;

  /** How soon after the failover command returns the promoted server must take a write. */
  static final Duration WRITABLE_WITHIN = Duration.ofSeconds(20);

  static final String NAME = "fo-leader";

  /**
   * The lease of the steady holder, a fourth one: it claims it once and holds it through the round,
   * writing every {@link #STEADY_PAUSE_MS} ms, so that a lease is held across every failover with
   * no statement of its holder in flight at the kill (the other holders hand {@link #NAME} over,
   * and the failover fires in one of their steps): kept when the failover is shorter than the local
   * deadline, lost cleanly when not.
   */
  static final String STEADY = "fo-steady";

  static final int STEADY_PAUSE_MS = 50;

  final FailoverHook hook;
  private final int quickRounds;
  private final int fullRounds;
  final Break broken;

  /** What the pair promises: as declared, or null to read it from the primary ({@link #mode}). */
  private final Boolean declared;

  /** The mode this check runs under (declared, or read at its start). */
  boolean synchronous;

  /** How the mode was found, for the result's note. */
  private String modeSource = "declared";

  final Moment fixedMoment;

  /**
   * How soon the promoted server must take a write ({@link #WRITABLE_WITHIN}; tests shorten it).
   */
  Duration writableWithin = WRITABLE_WITHIN;

  /**
   * @param hook fails the database over; null when none was given (the property is then skipped)
   * @param synchronous true when the pair replicates synchronously: then an acknowledged claim or
   *     commit that vanished is a violation
   */
  public FailoverProperty(
      FailoverHook hook, int quickRounds, int fullRounds, boolean synchronous, Break broken) {
    this(hook, quickRounds, fullRounds, synchronous, broken, null);
  }

  /**
   * @param moment the moment of every round's failover, or null for a generated one per round
   */
  public FailoverProperty(
      FailoverHook hook,
      int quickRounds,
      int fullRounds,
      boolean synchronous,
      Break broken,
      Moment moment) {
    this(hook, quickRounds, fullRounds, (Boolean) synchronous, broken, moment);
  }

  private FailoverProperty(
      FailoverHook hook,
      int quickRounds,
      int fullRounds,
      Boolean declared,
      Break broken,
      Moment moment) {
    this.hook = hook;
    this.quickRounds = quickRounds;
    this.fullRounds = fullRounds;
    this.declared = declared;
    this.synchronous = Boolean.TRUE.equals(declared);
    this.broken = Objects.requireNonNull(broken);
    this.fixedMoment = moment;
  }

  /** The runner's property: {@code hook} may be null (no --failover-command: skipped). */
  public FailoverProperty(FailoverHook hook) {
    this(hook, (Boolean) null);
  }

  /**
   * The runner's property with the user's {@code --failover-replication}: true sync, false async,
   * null to read it from the primary at the start of the check.
   */
  public FailoverProperty(FailoverHook hook, Boolean declared) {
    this(hook, 3, 50, declared, Break.NONE, null);
  }

  /**
   * Whether the pair replicates synchronously: as declared, else as the primary says (PostgreSQL:
   * {@code synchronous_standby_names} set and {@code synchronous_commit} waiting for the standby;
   * MariaDB/MySQL: semi-synchronous replication active on the primary). Unknown counts as
   * asynchronous (the weaker promise: lost commits are reported, not violations).
   */
  boolean mode(Target target) {
    if (declared != null) {
      modeSource = "declared";
      return declared;
    }
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      if (target.isPostgres()) {
        String names;
        String commit;
        try (ResultSet rs =
            s.executeQuery(
                "SELECT current_setting('synchronous_standby_names'),"
                    + " current_setting('synchronous_commit')")) {
          rs.next();
          names = rs.getString(1);
          commit = rs.getString(2);
        }
        modeSource =
            "read: synchronous_standby_names '" + names + "', synchronous_commit " + commit;
        return !names.isBlank() && !commit.equals("off") && !commit.equals("local");
      }
      try (ResultSet rs =
          s.executeQuery(
              "SHOW GLOBAL STATUS WHERE Variable_name IN ('Rpl_semi_sync_master_status',"
                  + " 'Rpl_semi_sync_source_status')")) {
        boolean on = false;
        while (rs.next()) {
          on |= "ON".equalsIgnoreCase(rs.getString(2));
        }
        modeSource = "read: semi-synchronous replication " + (on ? "on" : "off");
        return on;
      }
    } catch (SQLException e) {
      modeSource = "unknown (" + e.getMessage() + ")";
      return false;
    }
  }

  /**
   * The negative control: holders that trust their own clock instead of the verify, failed over
   * during a claim (what an asynchronous failover loses is a claim made after the stall).
   */
  public FailoverProperty holderTrustsItsClock() {
    return new FailoverProperty(
        hook,
        quickRounds,
        fullRounds,
        declared,
        Break.HOLDER_TRUSTS_ITS_CLOCK,
        Moment.DURING_CLAIM);
  }

  /**
   * The negative control of every mode, synchronous ones included: the holders' claims keep the
   * term (lease-core's real claim statement, mutated where it reaches the driver).
   */
  public FailoverProperty claimKeepsTerm() {
    return new FailoverProperty(
        hook, quickRounds, fullRounds, declared, Break.CLAIM_KEEPS_TERM, fixedMoment);
  }

  /**
   * The negative control of terms across a failover: hand-overs write term + 1 (lease-core's real
   * statements, mutated where they reach the driver); failed over during a claim, so that the lost
   * claim's number is granted again. Only an asynchronous pair can lose a claim.
   */
  public FailoverProperty termPlusOne() {
    return new FailoverProperty(
        hook, quickRounds, fullRounds, declared, Break.TERM_PLUS_ONE, Moment.DURING_CLAIM);
  }

  /** This check with another bound on the promoted server's first write (tests). */
  FailoverProperty writableWithin(Duration bound) {
    this.writableWithin = Objects.requireNonNull(bound);
    return this;
  }

  /**
   * Rounds (failovers) a check of {@code size} runs: the runner's are 3 quick, 50 full (the CI runs
   * 20 per mode through {@code lease.failover.rounds}).
   */
  int rounds(Size size) {
    return size.pick(quickRounds, fullRounds);
  }

  public boolean hasHook() {
    return hook != null;
  }

  @Override
  public String id() {
    return "failover";
  }

  @Override
  public String headline() {
    return "Across a database failover, terms never repeat and no commit under a term lands after the next term's claim.";
  }

  @Override
  public String summary() {
    return "across a failover of the database, no transaction of term t commits after the claim of"
        + " t+1, no row is kept under a term the promoted server never granted, and a holder whose"
        + " claim vanished stops";
  }

  @Override
  public String countsAsATest() {
    return "failovers run with a holder leading again on the promoted server afterwards, and"
        + " hand-overs before them";
  }

  @Override
  public List<NegativeControl> controls() {
    return List.of(
        new NegativeControl(
            "failover/holder-trusts-its-clock",
            "a holder writes unfenced while its own clock says its claim is good",
            holderTrustsItsClock(),
            t ->
                hook == null
                    ? "no --failover-command"
                    : mode(t)
                        ? "synchronous replication loses no claim, so a holder of a vanished claim"
                            + " has nothing to write under"
                        : null),
        new NegativeControl(
            "failover/claim-keeps-term",
            dev.lease.conformance.Mutation.CLAIM_KEEPS_TERM.breaks(),
            claimKeepsTerm(),
            t -> hook == null ? "no --failover-command" : null),
        new NegativeControl(
            "failover/term-plus-one",
            dev.lease.conformance.Mutation.TERM_PLUS_ONE.breaks(),
            termPlusOne(),
            t ->
                hook == null
                    ? "no --failover-command"
                    : mode(t)
                        ? "synchronous replication loses no claim, so no term can be granted again"
                        : null));
  }

  @Override
  public PropertyResult check(Target target, Size size, long seed, Progress progress) {
    long started = System.nanoTime();
    if (hook == null) {
      return new PropertyResult(
          id(),
          target.label(),
          0,
          0,
          List.of(),
          0,
          null,
          "skipped: no --failover-command (the runner cannot fail a database over by itself)",
          0);
    }
    synchronous = mode(target);
    int rounds = rounds(size);
    Totals totals = new Totals();
    String failure = null;
    // the holders' JVMs serve every round of this check: started once (a JVM with the drivers
    // and HikariCP loaded is seconds of a loaded machine's time), while the first round prepares
    HolderProcesses holders;
    try {
      holders = HolderProcesses.start(HOLDERS + 1, target.url());
    } catch (IOException e) {
      return new PropertyResult(
          id(),
          target.label(),
          0,
          0,
          List.of(),
          0,
          "the holder processes could not start: " + e.getMessage(),
          hook.describe(),
          (System.nanoTime() - started) / 1_000_000);
    }
    try (holders) {
      for (int r = 0; r < rounds; r++) {
        Random random = new Random(seed * 1_000_003L + r);
        FailoverRound round = new FailoverRound(this, target, holders, random, r);
        try {
          round.run();
        } catch (Exception e) {
          failure =
              "round "
                  + r
                  + " (seed "
                  + seed
                  + ", moment "
                  + round.moment
                  + ") could not run: "
                  + e;
          totals.add(round);
          break;
        }
        totals.add(round);
        // where a round's time went: a slow promotion shows here, not only in the counts
        System.out.println("failover round " + r + ": " + round.milestones());
        if (Boolean.getBoolean("lease.failover.log")) { // the tests' log: every phase of a round
          System.out.println(
              "failover round "
                  + r
                  + " "
                  + target.label()
                  + (synchronous ? " sync" : " async")
                  + (broken == Break.NONE ? "" : " " + broken)
                  + " ("
                  + round.moment
                  + ", lag "
                  + round.lagMs
                  + " ms): "
                  + round.timing());
        }
        progress.update(r + 1, totals.failovers);
        if (!round.violations.isEmpty()) {
          failure =
              "seed "
                  + seed
                  + ", round "
                  + r
                  + " (moment "
                  + round.moment
                  + ", lag "
                  + round.lagMs
                  + " ms): "
                  + round.violations.get(0);
          if (broken != Break.NONE) {
            break; // a control stops at its first violation
          }
        }
      }
    }
    List<Count> counts = new ArrayList<>();
    counts.add(new Count("failovers run", totals.failovers, rounds));
    counts.add(new Count("failovers after which a holder led again", totals.ledAgain, rounds));
    counts.add(new Count("hand-overs before the failovers", totals.handOvers, rounds));
    counts.add(Count.info("hand-overs lost with the failover", totals.claimsVanished));
    counts.add(Count.info("acknowledged commits lost with the failover", totals.commitsVanished));
    counts.add(Count.info("claims kept though the claimer saw an error", totals.claimsUnknown));
    // A term granted again to another holder is a violation (each one is reported): a hand-over
    // writes max(term + 1, clock in µs), so a claim lost with an asynchronous failover does not
    // leave its number to the next claim on the promoted server.
    counts.add(
        Count.info("terms granted again to another holder after the failover", totals.termsReused));
    counts.add(Count.info("transactions refused by the fence", totals.refused));
    counts.add(Count.info("transactions failed by the failover", totals.failedTransactions));
    // every round holds the steady lease across its failover: kept, or (a failover longer than
    // the local deadline) lost; a run in which none was either is inconclusive
    counts.add(
        new Count(
            "leases held across a failover, kept or lost",
            totals.leasesKept + totals.leasesLost,
            rounds));
    counts.add(Count.info("leases held across a failover and kept", totals.leasesKept));
    counts.add(Count.info("leases held across a failover and lost", totals.leasesLost));
    counts.add(Count.info("max ms from the kill to a holder leading again", totals.maxLeadAgainMs));
    counts.add(
        Count.info(
            "median ms from the kill to a holder leading again", totals.medianLeadAgainMs()));
    counts.add(
        Count.info("mean ms per round", totals.rounds == 0 ? 0 : totals.roundMs / totals.rounds));
    if (broken == Break.CLAIM_KEEPS_TERM || broken == Break.TERM_PLUS_ONE) {
      // a control whose mutation changed no statement has broken nothing
      counts.add(Count.info("statements the break changed", totals.mutated));
    }
    return new PropertyResult(
        id(),
        target.label(),
        totals.rounds,
        totals.failovers,
        counts,
        totals.violations,
        failure,
        (synchronous ? "synchronous" : "asynchronous")
            + " replication ("
            + modeSource
            + "); "
            + hook.describe()
            + (broken == Break.NONE ? "" : "; broken: " + broken),
        (System.nanoTime() - started) / 1_000_000);
  }

  /** Totals over the rounds of one check. */
  static final class Totals {
    long rounds;
    long failovers;
    long ledAgain;
    long handOvers;
    long claimsVanished;
    long commitsVanished;
    long claimsUnknown;
    long termsReused;
    long refused;
    long failedTransactions;
    long leasesKept;
    long leasesLost;
    long violations;
    long maxLeadAgainMs;
    long mutated;
    long roundMs;
    final List<Long> leadAgainMs = new ArrayList<>();

    void add(FailoverRound r) {
      rounds++;
      failovers += r.failedOver ? 1 : 0;
      handOvers += r.handOversBefore;
      claimsVanished += r.claimsVanished;
      commitsVanished += r.commitsVanished;
      claimsUnknown += r.claimsUnknown;
      termsReused += r.termsReused;
      refused += r.refused.get();
      failedTransactions += r.failed.get();
      leasesKept += r.leasesKept;
      leasesLost += r.leasesLost;
      violations += r.violations.size();
      mutated += r.mutated;
      if (r.phases.size() >= 2) {
        roundMs +=
            (r.phases.get(r.phases.size() - 1).getValue() - r.phases.get(0).getValue()) / 1_000_000;
      }
      if (r.leadAgainMs >= 0) {
        ledAgain++;
        leadAgainMs.add(r.leadAgainMs);
        maxLeadAgainMs = Math.max(maxLeadAgainMs, r.leadAgainMs);
      }
    }

    long medianLeadAgainMs() {
      if (leadAgainMs.isEmpty()) {
        return 0;
      }
      List<Long> sorted = new ArrayList<>(leadAgainMs);
      sorted.sort(null);
      return sorted.get(sorted.size() / 2);
    }
  }

  /** A lease as the parent knows it from its holder's events: term and holder token. */
  record LeaseRef(boolean steady, long term, String holder) {}

  /**
   * A claim acknowledged to a holder: {@code askedNanos} when its holder asked (a claim asked after
   * the promotion completed cannot have run on the killed primary), {@code claimedNanos} when it
   * was acknowledged.
   */
  record Granted(LeaseRef lease, long askedNanos, long claimedNanos) {}

  /** A commit acknowledged to a holder. */
  record Committed(String holder, long term, long txn, long nanos) {}

  /** The fence refused: lease-jdbc's exception, anywhere in the chain. */
  static boolean refusedByFence(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof LeaseLostSQLException) {
        return true;
      }
    }
    return false;
  }

  private static void pause(long millis) {
    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
  }

  /** Waits for {@code condition} up to {@code limit}; true when it came true. */
  static boolean awaitFor(BooleanSupplier condition, Duration limit) {
    long end = System.nanoTime() + limit.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        return false;
      }
      pause(10);
    }
    return true;
  }
}
