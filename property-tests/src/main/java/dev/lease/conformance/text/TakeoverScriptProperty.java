package dev.lease.conformance.text;

import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.QuickCheck;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.conformance.text.ScriptStatement.Kind;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Invariant 3, for SQL text, the other way round: a healthy holder runs a generated script's
 * transaction (opened with {@code setAutoCommit(false)}, BEGIN or MySQL's {@code SET autocommit =
 * 0} as SQL, a counter write, then more of the grammar, then a commit as JDBC or as SQL), statement
 * by statement; after its first write it pauses (a stop-the-world pause: its process clock frozen,
 * no renewals) while another process claims the expired lease, then goes on. Nothing of the script
 * commits after the claim: the counter table the successor read right after its claim is the
 * counter table at the end.
 *
 * <p>Counted: takeovers attempted while the script's transaction was open with a write in it.
 * Negative controls: VERIFY mode (no lock orders the claim after the holder's commit) and no fence,
 * both caught on the servers; on SQLite the single writer makes the claim wait for the holder's
 * open write transaction whatever the fence, so they do not apply there.
 */
public final class TakeoverScriptProperty implements ConformanceProperty {

  /** A transaction script: how it opens, its first write, the rest, how it commits. */
  public record TxScript(
      Opening opening,
      ScriptStatement firstWrite,
      List<ScriptStatement> rest,
      boolean sqlCommit,
      boolean prepared) {

    @Override
    public String toString() {
      return opening
          + " | "
          + firstWrite
          + " | <pause until the claim> | "
          + rest.stream().map(ScriptStatement::sql).collect(Collectors.joining(" | "))
          + (rest.isEmpty() ? "" : " | ")
          + (sqlCommit ? "COMMIT (SQL)" : "commit()")
          + (prepared ? " [prepared]" : "");
    }
  }

  /** How the script's transaction opens. */
  public enum Opening {
    SET_AUTOCOMMIT_FALSE,
    BEGIN_AS_SQL,
    /** MySQL/MariaDB: SET autocommit = 0 as SQL. */
    AUTOCOMMIT_OFF_AS_SQL
  }

  private final TextFence fence;

  public TakeoverScriptProperty() {
    this(TextFence.STRICT);
  }

  public TakeoverScriptProperty(TextFence fence) {
    this.fence = fence;
  }

  @Override
  public String id() {
    return fence == TextFence.STRICT
        ? "sql-text-takeover"
        : "sql-text-takeover/" + (fence == TextFence.NONE ? "unfenced" : "verify");
  }

  @Override
  public String countsAsATest() {
    return "takeovers attempted while a generated script's transaction (opened by the API or as"
        + " SQL text) was open under the paused holder";
  }

  @Override
  public List<NegativeControl> controls() {
    return List.of(
        new NegativeControl(
            "sql-text-takeover/verify",
            "VERIFY mode instead of STRICT (no lock orders the claim after the commit)",
            new TakeoverScriptProperty(TextFence.VERIFY),
            t ->
                t.isSqlite()
                    ? "on SQLite VERIFY is not broken by a pause: the verify's read snapshot makes a"
                        + " stale holder's write fail (SQLITE_BUSY_SNAPSHOT)"
                    : null),
        new NegativeControl(
            "sql-text-takeover/unfenced",
            "no fence: the paused holder's scripts do not verify",
            new TakeoverScriptProperty(TextFence.NONE),
            t ->
                t.isSqlite()
                    ? "on SQLite the claim waits for the open write transaction's lock, fenced or"
                        + " not: the stale-lease property is SQLite's check of the fence"
                    : null));
  }

  @Override
  public String headline() {
    return "A holder paused inside a generated SQL script's transaction commits nothing after its successor's claim.";
  }

  @Override
  public String summary() {
    return "A healthy holder paused inside a generated SQL script's transaction, while another"
        + " process claims the expired lease, commits nothing of the script after the claim.";
  }

  static long requiredTakeovers(Size size) {
    return size.pick(3, 20);
  }

  Gen<TxScript> scripts(Target target, ScriptGrammar grammar) {
    List<Opening> openings =
        new ArrayList<>(List.of(Opening.SET_AUTOCOMMIT_FALSE, Opening.BEGIN_AS_SQL));
    if (target.isMySqlFamily()) {
      openings.add(Opening.AUTOCOMMIT_OFF_AS_SQL);
    }
    Gen<ScriptStatement> write = grammar.statements().assuming(s -> s.kind() == Kind.WRITE);
    return Generate.pick(openings)
        .zip(
            write,
            lists().of(grammar.statements()).ofSizeBetween(0, 4),
            integers().between(0, 3),
            (opening, w, rest, flags) ->
                new TxScript(
                    opening,
                    w,
                    rest,
                    opening != Opening.SET_AUTOCOMMIT_FALSE || (flags & 1) != 0,
                    (flags & 2) != 0))
        .describedAs(TxScript::toString);
  }

  @Override
  public PropertyResult check(Target target, Size size, long seed, Progress progress) {
    long started = System.nanoTime();
    TextCounts counts = new TextCounts();
    counts.require(
        "takeovers attempted with the script's transaction open", requiredTakeovers(size));
    try (TextTables tables = new TextTables(target);
        LeaseManager holderSide = tables.frozen("paused-holder");
        LeaseManager successorSide = tables.live("successor")) {
      DataSource ds = fence.wrap(new DriverBoundary(target), Duration.ofSeconds(1));
      ScriptGrammar grammar = new ScriptGrammar(target, tables.counter, tables.scratch);
      AtomicInteger round = new AtomicInteger();
      String[] broke = {null};
      // QuickTheories may stop a run early when its generator's assumptions reject too many
      // candidates (a script needs a write): more runs, from derived seeds, until the takeovers
      // this property needs were observed or a violation found (at most four)
      QuickCheck.Falsified f = null;
      for (int run = 0;
          run < 4
              && f == null
              && counts.observed("takeovers attempted with the script's transaction open")
                  < requiredTakeovers(size);
          run++) {
        f =
            QuickCheck.run(
                seed + run,
                size.pick(5, 30),
                size.pick(2, 10),
                scripts(target, grammar),
                script -> {
                  int r = round.incrementAndGet();
                  progress.update(
                      r, counts.observed("takeovers attempted with the script's transaction open"));
                  try {
                    String v =
                        round(target, tables, holderSide, successorSide, ds, script, r, counts);
                    if (v != null) {
                      broke[0] = v;
                      return false;
                    }
                    return true;
                  } catch (SQLException e) {
                    throw new IllegalStateException("cannot read the counter table", e);
                  }
                });
      }
      String failure = null;
      if (f != null) {
        failure =
            "seed "
                + f.seed()
                + " (replay: --seed "
                + f.seed()
                + "): this script committed after the successor's claim: "
                + f.smallest()
                + (broke[0] != null ? "\n    " + broke[0] : "")
                + (f.cause() != null ? "\n    " + f.cause() : "");
      }
      return counts.result(id(), target, round.get(), failure, null, started);
    } catch (SQLException e) {
      throw new IllegalStateException(
          id() + " on " + target.label() + " could not be set up: " + e.getMessage(), e);
    }
  }

  /** One round; returns what broke, or null. */
  private String round(
      Target target,
      TextTables tables,
      LeaseManager holderSide,
      LeaseManager successorSide,
      DataSource ds,
      TxScript script,
      int round,
      TextCounts counts)
      throws SQLException {
    String name = "round-" + round;
    Lease lease;
    try {
      lease = holderSide.tryClaim(name).orElse(null);
    } catch (LeaseException e) {
      // the round's own set-up claim timed out (a loaded machine): no round, not a violation; too
      // few rounds make the run inconclusive
      counts.add("rounds whose set-up claim failed", 1);
      return null;
    }
    if (lease == null) {
      return null;
    }
    counts.add("rounds", 1);
    long pauseNanos = 3 * TextTables.TIMINGS.leaseDuration().toNanos();
    CountDownLatch claimed = new CountDownLatch(1);
    String[] afterClaim = {null};
    boolean[] claimedDuringPause = {false};
    Thread claimer =
        new Thread(
            () -> {
              Lease l =
                  claimUntil(successorSide, name, System.nanoTime() + pauseNanos + 10_000_000_000L);
              if (l != null) {
                try {
                  afterClaim[0] = tables.snapshot(); // before the holder may go on
                } catch (SQLException e) {
                  afterClaim[0] = "unreadable: " + e.getMessage();
                }
                claimed.countDown();
                try {
                  l.release();
                } catch (LeaseException e) {
                  // expires by itself
                }
              }
            },
            "text-claimer");
    boolean open = false;
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = ds.getConnection()) {
      try {
        switch (script.opening()) {
          case SET_AUTOCOMMIT_FALSE -> c.setAutoCommit(false);
          case BEGIN_AS_SQL ->
              execute(c, target.isMySqlFamily() ? "START TRANSACTION" : "BEGIN", false);
          case AUTOCOMMIT_OFF_AS_SQL -> execute(c, "SET autocommit = 0", false);
        }
        execute(c, script.firstWrite().sql(), script.prepared());
        open = true; // a write of the counter in an open transaction
      } catch (SQLException e) {
        counts.add("scripts that failed before their first write", 1);
      }
      if (open) {
        counts.add("takeovers attempted with the script's transaction open", 1);
      }
      claimer.start();
      try {
        claimedDuringPause[0] = claimed.await(pauseNanos, TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (claimedDuringPause[0]) {
        counts.add("claims that completed while the holder was paused", 1);
      }
      for (ScriptStatement s : script.rest()) {
        try {
          execute(c, s.sql(), script.prepared());
        } catch (SQLException e) {
          counts.add("statements after the pause that failed", 1);
        }
      }
      try {
        if (script.sqlCommit()) {
          execute(c, "COMMIT", false);
        } else {
          c.commit();
        }
      } catch (SQLException e) {
        counts.add("commits after the pause that failed", 1);
      }
    } catch (SQLException e) {
      counts.add("sessions the server ended", 1); // close after the server ended the session
    }
    try {
      claimer.join(pauseNanos / 1_000_000 + 20_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (afterClaim[0] == null) {
      counts.add("rounds without a takeover", 1);
      return null;
    }
    String atEnd = tables.snapshot();
    if (!afterClaim[0].equals(atEnd)) {
      return "the counter table was "
          + afterClaim[0]
          + " right after the claim and "
          + atEnd
          + " at the end"
          + (claimedDuringPause[0] ? " (claimed while the holder was paused)" : "");
    }
    return null;
  }

  private static void execute(Connection c, String sql, boolean prepared) throws SQLException {
    if (prepared) {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        ps.execute();
      }
    } else {
      try (Statement s = c.createStatement()) {
        s.execute(sql);
      }
    }
  }

  private static Lease claimUntil(LeaseManager manager, String name, long deadlineNanos) {
    while (System.nanoTime() - deadlineNanos < 0) {
      try {
        Optional<Lease> l = manager.tryClaim(name);
        if (l.isPresent()) {
          return l.get();
        }
      } catch (LeaseException e) {
        // waited behind the holder's lock past the attempt timeout: try again
      }
      LockSupport.parkNanos(25_000_000L);
    }
    return null;
  }
}
