package dev.lease.conformance.text;

import static org.quicktheories.generators.SourceDSL.booleans;
import static org.quicktheories.generators.SourceDSL.integers;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.QuickCheck;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import java.sql.Connection;
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
import javax.sql.DataSource;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Invariant 3, for every JDBC object reachable from a fenced connection (issue 25): writes issued
 * through statements and connections got back from result sets, metadata, arrays, refcursors and
 * {@code unwrap}, and through large objects, in autocommit mode and in transactions, (a) by a
 * holder whose lease another process has taken over, and (b) by a healthy holder paused between two
 * writes while another process claims the expired lease. Nothing commits under the stale lease nor
 * after the claim, and no non-transactional effect appears (a sequence advanced, a large object
 * changed).
 *
 * <p>Counted, from what happened: writes sent under the taken-over lease, those sent through a
 * driver object (PostgreSQL), and takeovers attempted between the paused holder's two writes.
 * Negative controls: lease-jdbc handing out the driver's arrays, refcursors and LOBs unwrapped (as
 * before issue 25; PostgreSQL, where those objects reach the database), and no fence.
 */
public final class RawPathProperty implements ConformanceProperty {

  static final String NAME = "raw-path";

  /** How a write reaches the database from a fenced connection. */
  public enum Route {
    /** {@code createStatement().getConnection().createStatement()}. */
    STATEMENT_CONNECTION(false),
    /** a result set's {@code getStatement()}. */
    RESULT_STATEMENT(false),
    /** a metadata result set's statement's (or the metadata's) connection. */
    METADATA_CONNECTION(false),
    /** {@code unwrap(Connection.class)}. */
    UNWRAP_CONNECTION(false),
    /** {@code unwrap} of the driver's own connection type (under the lease: where allowed). */
    DRIVER_CONNECTION(false),
    /** PostgreSQL: {@code createArrayOf(..).getResultSet().getStatement()}. */
    CREATED_ARRAY(true),
    /** PostgreSQL: the same statement's connection. */
    CREATED_ARRAY_CONNECTION(true),
    /** PostgreSQL: {@code getArray} of a result, its result set's statement. */
    RESULT_ARRAY(true),
    /** PostgreSQL: a refcursor read with {@code getObject}, its statement. */
    REFCURSOR(true),
    /** PostgreSQL: a large object read with {@code getBlob}, written with {@code setBytes}. */
    LARGE_OBJECT(true);

    final boolean driverObject;

    Route(boolean driverObject) {
      this.driverObject = driverObject;
    }
  }

  /** What the write changes. */
  public enum Effect {
    /** the counter row, transactionally. */
    COUNTER,
    /** a sequence: not undone by a rollback (PostgreSQL, MariaDB). */
    SEQUENCE
  }

  /**
   * One generated write.
   *
   * @param early the object was reached before the lease was bound (read earlier), else under it
   */
  public record RawWrite(
      Route route,
      Effect effect,
      boolean autoCommit,
      boolean early,
      int delta,
      SessionMoves.Move move) {
    @Override
    public String toString() {
      return (move == SessionMoves.Move.NONE ? "" : "after " + move + ": ")
          + route
          + (route == Route.LARGE_OBJECT || SessionMoves.replacesTheWrite(move)
              ? ""
              : " " + effect + (effect == Effect.COUNTER ? " +" + delta : ""))
          + (autoCommit ? " autocommit" : " in a transaction, commit()")
          + (early ? ", reached before the lease was bound" : ", reached under the lease");
    }

    RawWrite with(SessionMoves.Move m) {
      if (m == SessionMoves.Move.KEPT_HANDLE) {
        return new RawWrite(Route.DRIVER_CONNECTION, Effect.COUNTER, true, false, delta, m);
      }
      if (SessionMoves.replacesTheWrite(m) || m == SessionMoves.Move.OTHER_SCHEMA) {
        // the write is the move's own, or the counter's through a plain statement
        return new RawWrite(
            Route.STATEMENT_CONNECTION, Effect.COUNTER, autoCommit, false, delta, m);
      }
      return new RawWrite(route, effect, autoCommit, early, delta, m);
    }
  }

  private final TextFence fence;
  private final boolean nonTransactional;

  public RawPathProperty() {
    this(TextFence.STRICT);
  }

  public RawPathProperty(TextFence fence) {
    this(fence, true);
  }

  /**
   * @param nonTransactional also write non-transactional effects (a sequence's nextval): on
   *     PostgreSQL a statement that carries the verify along must not run when the verify refuses
   *     (issue 25 item 3: the verify fails in the server; ServerRefusalTest shows the previous
   *     mechanism letting it run)
   */
  public RawPathProperty(TextFence fence, boolean nonTransactional) {
    this.fence = fence;
    this.nonTransactional = nonTransactional;
  }

  @Override
  public String id() {
    return fence == TextFence.STRICT
        ? NAME
        : NAME
            + "/"
            + (fence == TextFence.NONE
                ? "unfenced"
                : fence == TextFence.TRUSTS_THE_SESSION
                    ? "trusts-the-session"
                    : "raw-driver-objects");
  }

  @Override
  public String headline() {
    return "No write through a JDBC object reachable from a fenced connection lands under a taken-over lease.";
  }

  @Override
  public String summary() {
    return "No write issued through a JDBC object reachable from a fenced connection (statements"
        + " and connections got back from result sets, metadata, arrays, refcursors, unwrap; large"
        + " objects), in autocommit or a transaction, after whatever its session did (a temporary"
        + " copy of the lease table, another schema, its own operators, slow DDL, a delayed insert,"
        + " a driver handle kept from an earlier transaction), commits under a lease taken over or"
        + " after a paused holder's claim, nor advances a sequence.";
  }

  @Override
  public String countsAsATest() {
    return "writes through reached objects under the taken-over lease (through driver objects on"
        + " PostgreSQL), and takeovers attempted between a paused holder's two writes";
  }

  @Override
  public List<NegativeControl> controls() {
    return List.of(
        new NegativeControl(
            NAME + "/raw-driver-objects",
            "lease-jdbc hands out the driver's arrays, refcursors and LOBs unwrapped (before"
                + " issue 25)",
            new RawPathProperty(TextFence.RAW_DRIVER_OBJECTS),
            t ->
                t.isPostgres()
                    ? null
                    : "only pgjdbc's arrays, refcursors and large objects reach the database"),
        NegativeControl.of(
            NAME + "/trusts-the-session",
            "lease-jdbc before issue 35: the verify reads what the session calls the lease table,"
                + " effects outside the lock run after a verify of their own, driver objects"
                + " outlive their transaction",
            new RawPathProperty(TextFence.TRUSTS_THE_SESSION)),
        NegativeControl.of(
            NAME + "/unfenced",
            "no fence: the writes do not verify",
            new RawPathProperty(TextFence.NONE)));
  }

  static long requiredStaleWrites(Size size) {
    return size.pick(40, 300);
  }

  static long requiredDriverObjectWrites(Target target, Size size) {
    return target.isPostgres() ? size.pick(10, 80) : 0;
  }

  static long requiredTakeovers(Size size) {
    return size.pick(3, 10);
  }

  static long requiredSessionMoves(Size size) {
    return size.pick(15, 120);
  }

  static final String STALE_WRITES = "writes sent under the taken-over lease";
  static final String DRIVER_OBJECT_WRITES =
      "writes through arrays, refcursors and large objects under the taken-over lease";
  static final String TAKEOVERS = "takeovers attempted between the paused holder's two writes";
  static final String SESSION_MOVES =
      "writes after a session move (temporary copy, schema, operators, slow DDL, delayed insert,"
          + " kept handle)";

  Gen<RawWrite> writes(Target target, boolean sequences, List<SessionMoves.Move> moves) {
    // half of the writes after a move, half plain, however many moves the database has
    List<SessionMoves.Move> weighted = new ArrayList<>();
    for (SessionMoves.Move m : moves) {
      if (m != SessionMoves.Move.NONE) {
        weighted.add(m);
        weighted.add(SessionMoves.Move.NONE);
      }
    }
    if (weighted.isEmpty()) {
      weighted.add(SessionMoves.Move.NONE);
    }
    return writes(target, sequences)
        .zip(Generate.pick(weighted), RawWrite::with)
        .describedAs(RawWrite::toString);
  }

  Gen<RawWrite> writes(Target target, boolean sequences) {
    List<Route> routes = new ArrayList<>();
    for (Route r : Route.values()) {
      if (!r.driverObject || target.isPostgres()) {
        routes.add(r);
      }
    }
    List<Effect> effects =
        sequences ? List.of(Effect.COUNTER, Effect.SEQUENCE) : List.of(Effect.COUNTER);
    return Generate.pick(routes)
        .zip(
            Generate.pick(effects),
            booleans().all(),
            integers().between(0, 99),
            (route, effect, autoCommit, n) ->
                new RawWrite(
                    route,
                    route == Route.LARGE_OBJECT ? Effect.COUNTER : effect,
                    autoCommit,
                    (n & 1) != 0 && route != Route.DRIVER_CONNECTION,
                    1 + n / 2,
                    SessionMoves.Move.NONE))
        .describedAs(RawWrite::toString);
  }

  @Override
  public PropertyResult check(Target target, Size size, long seed, Progress progress) {
    long started = System.nanoTime();
    TextCounts counts = new TextCounts();
    counts.require(STALE_WRITES, requiredStaleWrites(size));
    counts.require(DRIVER_OBJECT_WRITES, requiredDriverObjectWrites(target, size));
    counts.require(TAKEOVERS, requiredTakeovers(size));
    counts.require(SESSION_MOVES, requiredSessionMoves(size));
    try (TextTables tables = new TextTables(target);
        SessionMoves moves = new SessionMoves(target, tables);
        RawObjects objects = new RawObjects(target, tables, moves);
        LeaseManager holderSide = tables.frozen("raw-holder");
        LeaseManager successorSide = tables.live("raw-successor")) {
      DataSource ds = fence.wrap(target.dataSource(), Duration.ofSeconds(1));
      Gen<RawWrite> gen =
          writes(target, nonTransactional && objects.sequence != null, moves.available());
      String[] broke = {null};
      long[] n = {0};

      // (a) a holder whose lease was taken over: a fresh one per write, so that every write meets
      // the database (a lease the database refused once is refused locally from then on)
      QuickCheck.Falsified f =
          QuickCheck.run(
              seed,
              size.pick(60, 500),
              size.pick(30, 200),
              gen,
              w -> {
                n[0]++;
                if (n[0] % 25 == 0) {
                  progress.update(n[0], counts.observed(STALE_WRITES));
                }
                try {
                  Lease stale = StaleScriptProperty.firstClaim(holderSide, NAME + "-" + n[0]);
                  String before = objects.snapshot();
                  staleWrite(ds, stale, objects, w, counts);
                  String after = objects.snapshot();
                  if (!before.equals(after)) {
                    broke[0] = "under the taken-over lease: " + before + " became " + after;
                    return false;
                  }
                  return true;
                } catch (SQLException e) {
                  throw new IllegalStateException("cannot read the tables", e);
                }
              });
      String what = "under a lease taken over, this write changed the database: ";

      // (b) a healthy holder paused between two writes while the successor claims
      if (f == null) {
        AtomicInteger round = new AtomicInteger();
        // rounds until the takeovers it needs were attempted, at most 6 × 4 (24 × 6 full): on
        // MySQL Connector/J many rounds' first write fails (a write path it lacks) and attempts
        // no takeover, and 3 × 4 left a campaign's runs short (issue 38)
        for (int run = 0;
            run < 6 && f == null && counts.observed(TAKEOVERS) < requiredTakeovers(size);
            run++) {
          f =
              QuickCheck.run(
                  seed + 1 + run,
                  size.pick(4, 12),
                  size.pick(2, 6),
                  gen,
                  w -> {
                    try {
                      String v =
                          takeoverRound(
                              ds,
                              holderSide,
                              successorSide,
                              objects,
                              w,
                              round.incrementAndGet(),
                              counts);
                      if (v != null) {
                        broke[0] = v;
                        return false;
                      }
                      return true;
                    } catch (SQLException e) {
                      throw new IllegalStateException("cannot read the tables", e);
                    }
                  });
        }
        what = "a paused holder's write through this object committed after the claim: ";
        n[0] += round.get();
      }
      String failure = null;
      if (f != null) {
        failure =
            "seed "
                + f.seed()
                + " (replay: --seed "
                + f.seed()
                + "): "
                + what
                + f.smallest()
                + (broke[0] != null ? "\n    " + broke[0] : "")
                + (f.cause() != null ? "\n    " + f.cause() : "");
      }
      return counts.result(id(), target, n[0], failure, null, started);
    } catch (SQLException | LeaseException e) {
      throw new IllegalStateException(
          id() + " on " + target.label() + " could not be set up: " + e.getMessage(), e);
    }
  }

  /**
   * The database gives {@code lease}'s name to a successor (the row as a committed claim leaves
   * it); its holder does not know: its process clock is frozen.
   */
  private static void takeOver(Lease lease, TextTables tables) throws SQLException {
    String name = lease.name();
    try (Connection c = tables.target.connect();
        java.sql.PreparedStatement ps =
            c.prepareStatement(
                "UPDATE "
                    + tables.leases
                    + " SET holder = 'successor', instance = 'successor', term = term + 1"
                    + " WHERE name = ?")) {
      ps.setString(1, name);
      ps.executeUpdate();
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }

  /** One write under the stale lease on a new session, counting what happened. */
  private static void staleWrite(
      DataSource ds, Lease stale, RawObjects objects, RawWrite w, TextCounts counts) {
    SQLException error = null;
    try (Connection c = ds.getConnection()) {
      // a kept handle needs a verified transaction to keep it from: the takeover rounds make one
      SessionMoves.Move move =
          w.move() == SessionMoves.Move.KEPT_HANDLE ? SessionMoves.Move.NONE : w.move();
      objects.moves.prepare(c, move); // while the lease is still its holder's
      if (move != SessionMoves.Move.NONE) {
        counts.add(SESSION_MOVES, 1);
      }
      Object reached = w.early() ? objects.reach(c, w.route()) : null;
      takeOver(stale, objects.tables);
      try (LeaseContext.Scope scope = LeaseContext.bind(stale)) {
        c.setAutoCommit(w.autoCommit());
        counts.add(STALE_WRITES, 1);
        if (w.route().driverObject) {
          counts.add(DRIVER_OBJECT_WRITES, 1);
        }
        try {
          if (reached == null) {
            reached = objects.reach(c, w.route());
          }
          objects.write(reached, w);
          if (!w.autoCommit()) {
            c.commit();
          }
        } catch (SQLException e) {
          error = e;
        } finally {
          if (!w.autoCommit()) {
            c.rollback();
          }
        }
      }
    } catch (SQLException e) {
      error = error == null ? e : error;
    }
    String state = error == null ? null : error.getSQLState();
    if (state != null && state.startsWith("LF")) {
      counts.add("refused by the fence", 1);
    } else if (error != null) {
      counts.add("ended by a database or driver error", 1);
    }
  }

  /** One round of (b); returns what broke, or null. */
  private String takeoverRound(
      DataSource ds,
      LeaseManager holderSide,
      LeaseManager successorSide,
      RawObjects objects,
      RawWrite w,
      int round,
      TextCounts counts)
      throws SQLException {
    String name = NAME + "-round-" + round;
    Lease lease;
    try {
      lease = holderSide.tryClaim(name).orElse(null);
    } catch (LeaseException e) {
      counts.add("rounds whose set-up claim failed", 1);
      return null;
    }
    if (lease == null) {
      return null;
    }
    long pauseNanos = 3 * TextTables.TIMINGS.leaseDuration().toNanos();
    CountDownLatch claimed = new CountDownLatch(1);
    String[] afterClaim = {null};
    Thread claimer =
        new Thread(
            () -> {
              Lease l =
                  claimUntil(successorSide, name, System.nanoTime() + pauseNanos + 10_000_000_000L);
              if (l != null) {
                try {
                  afterClaim[0] = objects.snapshot(); // before the holder may go on
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
            "raw-claimer");
    try (Connection c = ds.getConnection()) {
      objects.moves.prepare(c, w.move());
      if (w.move() != SessionMoves.Move.NONE) {
        counts.add(SESSION_MOVES, 1);
      }
      if (w.move() == SessionMoves.Move.SLOW_DDL) {
        // the statement runs across the claim: the claimer starts first, the DDL's body sleeps
        // through the pause
        claimer.start();
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Statement s = c.createStatement()) {
          counts.add(TAKEOVERS, 1);
          objects.moves.write(s, w.move(), pauseNanos / 1_000_000);
        } catch (SQLException e) {
          counts.add("first writes that failed", 1);
        }
        return afterRound(claimer, pauseNanos, afterClaim, objects, counts);
      }
      if (w.move() == SessionMoves.Move.KEPT_HANDLE) {
        keptHandle(c, lease, objects, w, claimer, claimed, pauseNanos, counts);
        return afterRound(claimer, pauseNanos, afterClaim, objects, counts);
      }
      Object reached = w.early() ? objects.reach(c, w.route()) : null;
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        c.setAutoCommit(w.autoCommit());
        boolean wrote = false;
        try {
          if (reached == null) {
            reached = objects.reach(c, w.route());
          }
          objects.write(reached, w);
          wrote = true;
        } catch (SQLException e) {
          counts.add("first writes that failed", 1);
        }
        if (wrote) {
          counts.add(TAKEOVERS, 1);
        }
        claimer.start();
        try {
          if (claimed.await(pauseNanos, TimeUnit.NANOSECONDS)) {
            counts.add("claims that completed while the holder was paused", 1);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        try {
          if (reached != null) {
            objects.write(reached, w);
          }
          if (!w.autoCommit()) {
            c.commit();
          }
        } catch (SQLException e) {
          counts.add("writes or commits after the pause that failed", 1);
        } finally {
          if (!w.autoCommit()) {
            try {
              c.rollback();
            } catch (SQLException e) {
              // the server ended the session
            }
          }
        }
      }
    } catch (SQLException e) {
      counts.add("sessions the server ended", 1);
    }
    return afterRound(claimer, pauseNanos, afterClaim, objects, counts);
  }

  /**
   * {@link SessionMoves.Move#KEPT_HANDLE}: the driver's connection unwrapped inside a verified
   * transaction, written through and committed; after the pause (the successor's claim) the kept
   * handle writes and commits on its own.
   */
  private static void keptHandle(
      Connection c,
      Lease lease,
      RawObjects objects,
      RawWrite w,
      Thread claimer,
      CountDownLatch claimed,
      long pauseNanos,
      TextCounts counts) {
    Statement kept = null;
    try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
      c.setAutoCommit(false);
      kept = (Statement) objects.reach(c, Route.DRIVER_CONNECTION);
      objects.write(kept, w);
      c.commit();
      counts.add(TAKEOVERS, 1);
    } catch (SQLException e) {
      counts.add("first writes that failed", 1);
      return;
    }
    claimer.start();
    try {
      if (claimed.await(pauseNanos, TimeUnit.NANOSECONDS)) {
        counts.add("claims that completed while the holder was paused", 1);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      objects.write(kept, w);
      kept.getConnection().commit(); // the driver's own connection: past any fence
    } catch (SQLException e) {
      counts.add("writes through a kept handle that failed", 1);
    }
  }

  /** The end of a takeover round: what changed after the successor's claim, or null. */
  private static String afterRound(
      Thread claimer, long pauseNanos, String[] afterClaim, RawObjects objects, TextCounts counts)
      throws SQLException {
    try {
      claimer.join(pauseNanos / 1_000_000 + 20_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (afterClaim[0] == null) {
      counts.add("rounds without a takeover", 1);
      return null;
    }
    String atEnd = objects.snapshot();
    if (!afterClaim[0].equals(atEnd)) {
      return "right after the claim " + afterClaim[0] + ", at the end " + atEnd;
    }
    return null;
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
