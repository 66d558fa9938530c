package dev.lease.conformance.fault;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.Mutation;
import dev.lease.conformance.Mutations;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.PropertyResult.Count;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import java.io.IOException;
import java.net.URI;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * Real concurrency on the real database: three processes (each with its own lease manager, keeper
 * threads, clock and fenced DataSource) compete for one lease and run 3-row business transactions
 * under it with STRICT fencing, while faults hit them. The fault that matters most is the
 * whole-process freeze ({@link FreezableProcess}): a holder stopped inside its verified
 * transaction, keeper and clock included, for longer than its lease, as a GC pause or {@code
 * SIGSTOP} stops it. Nothing in the holder can give the lease up meanwhile; only the database can
 * stop the stale commit. Other faults: a worker thread stalled briefly, its session killed from an
 * admin session, its connections reset or its traffic delayed by a loopback TCP proxy, an
 * application error in the middle of a transaction.
 *
 * <p>The recorded {@link History} must show one holder per term, no commit under term t after the
 * claim of term t+1 completed (by the JVM's clock, by the database's clock, and as seen in the
 * lease row), and every transaction whole or absent. It counts as a test only when the dangerous
 * case happened often enough: on PostgreSQL and MariaDB (whose servers end an idle transaction) a
 * claim that completed while a verified transaction of the old term was still open; on SQLite and
 * MySQL (where STRICT makes the claim wait for the open transaction's lock) a claim that waited for
 * the verified transaction of a holder frozen past its lease; and commits on both sides of them.
 */
public final class FaultRunProperty implements ConformanceProperty {

  static final String NAME = "fenced-job";
  static final int ROWS = 3;
  static final int PROCESSES = 3;

  /** Short on purpose, so hand-overs happen within seconds; the checks do not depend on timing. */
  static final LeaseTimings TIMINGS =
      LeaseTimings.builder()
          .leaseDuration(Duration.ofMillis(1500))
          .renewInterval(Duration.ofMillis(250))
          .attemptTimeout(Duration.ofMillis(600))
          .localDeadline(Duration.ofMillis(1000))
          .gracePeriod(Duration.ofMillis(500))
          .build();

  /** STRICT's bound on a paused holder's open transaction (PostgreSQL, MariaDB). */
  static final Duration IDLE_IN_TRANSACTION = Duration.ofSeconds(1);

  /**
   * A freeze outlasts the lease and the idle bound, so the takeover (or the wait) happens in it.
   */
  static final long FREEZE_MIN_MS = TIMINGS.leaseDuration().toMillis() + 600;

  static final long FREEZE_SPREAD_MS = 500;

  enum FaultKind {
    NONE,
    FREEZE,
    STALL,
    KILL,
    PROXY_DROP,
    PROXY_DELAY,
    FAIL_MIDWAY
  }

  /** Where in a transaction a freeze begins. */
  enum FreezePoint {
    /** After the first statement (the verify) returned, before any write. */
    AFTER_VERIFY,
    /** After the first row was written. */
    AFTER_FIRST_WRITE,
    /** Inside commit(): after lease-jdbc's checks, before the commit reaches the database. */
    AT_COMMIT
  }

  private final String id;
  private final Fence fence;
  private final Set<Mutation> mutations;
  private final Set<FreezePoint> freezePoints;
  private final boolean control;

  public FaultRunProperty() {
    this("fault-run", Fence.STRICT, Set.of(), EnumSet.allOf(FreezePoint.class), false);
  }

  FaultRunProperty(
      String id,
      Fence fence,
      Set<Mutation> mutations,
      Set<FreezePoint> freezePoints,
      boolean control) {
    this.id = id;
    this.fence = fence;
    this.mutations = mutations;
    this.freezePoints = freezePoints;
    this.control = control;
  }

  /** VERIFY mode, each tenure frozen inside commit(): the stale commit lands after the claim. */
  static FaultRunProperty verifyControl() {
    return new FaultRunProperty(
        "fault-run/verify", Fence.VERIFY, Set.of(), EnumSet.of(FreezePoint.AT_COMMIT), true);
  }

  /** No fence, each tenure frozen before its first write: the stale rows commit after the claim. */
  static FaultRunProperty unfencedControl() {
    return new FaultRunProperty(
        "fault-run/unfenced", Fence.NONE, Set.of(), EnumSet.of(FreezePoint.AFTER_VERIFY), true);
  }

  /**
   * STRICT, with one of lease-core's or lease-jdbc's statements or calls broken (or, with {@link
   * Mutation#AUTOCOMMIT_STAYS_ON}, the application's transaction: how the history checker's
   * invariant 4 branch is shown to catch a real run).
   */
  static FaultRunProperty mutated(String id, Mutation m) {
    return new FaultRunProperty(
        id, Fence.STRICT, Set.of(m), EnumSet.allOf(FreezePoint.class), true);
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public String headline() {
    return "Real threads and injected faults: one holder per term, no commit under term t after term t+1's claim.";
  }

  @Override
  public String summary() {
    return "With real threads, whole processes frozen inside their transactions past their lease,"
        + " killed sessions, reset and delayed connections, STRICT fencing lets no transaction"
        + " verified under term t commit after the claim of term t+1, every term has one holder, and"
        + " no transaction is half-applied (invariants 1, 3, 4).";
  }

  @Override
  public String countsAsATest() {
    return "takeovers completed while a verified transaction of the old term was open (PostgreSQL,"
        + " MariaDB) or claims that waited for the verified transaction of a holder frozen past its"
        + " lease (SQLite, MySQL), and commits under the old and the new term of those hand-overs";
  }

  @Override
  public List<NegativeControl> controls() {
    return List.of(
        new NegativeControl(
            "fault-run/verify",
            "VERIFY mode instead of STRICT (no lock), the holder frozen inside commit()",
            verifyControl(),
            t ->
                t.isSqlite()
                    ? "on SQLite VERIFY is not broken by a pause: the verify's read snapshot makes a"
                        + " stale holder's write fail (SQLITE_BUSY_SNAPSHOT) and a holder that wrote"
                        + " holds the write lock the claim waits for"
                    : null),
        NegativeControl.of(
            "fault-run/unfenced",
            "no fence: the application's DataSource unwrapped, the holder frozen before its first"
                + " write",
            unfencedControl()),
        NegativeControl.of(
            "fault-run/claim-keeps-term",
            Mutation.CLAIM_KEEPS_TERM.breaks(),
            mutated("fault-run/claim-keeps-term", Mutation.CLAIM_KEEPS_TERM)));
  }

  @Override
  public PropertyResult check(Target target, Size size, long seed, Progress progress) {
    long started = System.nanoTime();
    String leases = target.newTable("leases");
    String business = target.newTable("business");
    Run run = new Run(target, leases, business, seed, size);
    try {
      return run.execute(progress, started);
    } catch (SQLException | IOException e) {
      throw new IllegalStateException(
          id + " on " + target.label() + " could not be set up: " + e.getMessage(), e);
    } finally {
      run.close();
      target.dropQuietly(leases, business);
    }
  }

  /** One fault run: its processes, proxies, admin session and history. */
  private final class Run {
    final Target target;
    final String leases;
    final String business;
    final long seed;
    final long minNanos;
    final long maxNanos;
    final int requiredEvents;
    final int requiredCommits;
    final History history = new History();
    final Mutations broken = Mutations.of(mutations);
    final AtomicLong txnSeq = new AtomicLong();
    final AtomicLong tried = new AtomicLong();
    final AtomicLong faults = new AtomicLong();
    final Map<FaultKind, AtomicLong> faultsByKind = new ConcurrentHashMap<>();
    final List<LoopbackProxy> proxies = new ArrayList<>();
    final List<LeaseManager> managers = new ArrayList<>();
    final List<FreezableProcess> processes = new ArrayList<>();
    volatile boolean stop;
    Connection admin;
    long hardDeadline;

    Run(Target target, String leases, String business, long seed, Size size) {
      this.target = target;
      this.leases = leases;
      this.business = business;
      this.seed = seed;
      this.minNanos = size.pick(6, 60) * 1_000_000_000L;
      this.maxNanos = size.pick(30, 180) * 1_000_000_000L;
      this.requiredEvents = size.pick(2, 8);
      this.requiredCommits = size.pick(2, 8);
    }

    PropertyResult execute(Progress progress, long started) throws SQLException, IOException {
      String product;
      try (LeaseManager setup =
          LeaseManager.builder(target.dataSource())
              .table(leases)
              .instance("setup")
              .createTableIfMissing()
              .build()) {
        product = setup.databaseProduct();
      }
      // where the server ends an idle transaction, the takeover happens across the open one;
      // elsewhere STRICT makes the claim wait for it
      boolean waits = target.isSqlite() || product.equals("MySQL");
      BusinessTable.create(target, business);
      Optional<URI> server = target.loopbackServer();
      if (!target.isSqlite()) {
        admin = target.connect();
      }
      List<Thread> workers = new ArrayList<>();
      for (int i = 0; i < PROCESSES; i++) {
        LoopbackProxy proxy = null;
        DataSource base = target.dataSource();
        if (server.isPresent()) {
          proxy = new LoopbackProxy(server.get().getPort());
          proxies.add(proxy);
          base = target.dataSourceAt(proxy.port());
        }
        FreezableProcess process = new FreezableProcess("process-" + i, broken);
        processes.add(process);
        DataSource ds = process.dataSource(base, false);
        LeaseManager.Builder builder =
            LeaseManager.builder(ds)
                .table(leases)
                .instance("process-" + i)
                .timings(TIMINGS)
                .failurePolicy(FailurePolicy.logOnly());
        // everything of the process that a freeze must stop: its clock and its threads
        LeaseInternals.clock(builder, process.clock());
        LeaseInternals.scheduler(builder, process.scheduler());
        LeaseInternals.attemptExecutor(builder, process.attemptExecutor());
        LeaseInternals.lossExecutor(builder, process.lossExecutor());
        LeaseManager manager = builder.build();
        managers.add(manager);
        Worker w =
            new Worker(
                manager,
                process,
                fence.wrap(process.dataSource(base, true), IDLE_IN_TRANSACTION),
                proxy,
                new Random(seed * 31 + i));
        Thread t = new Thread(w::run, "fault-run-process-" + i);
        t.setDaemon(true);
        workers.add(t);
      }
      long t0 = System.nanoTime();
      hardDeadline = t0 + maxNanos;
      workers.forEach(Thread::start);
      long lastProgress = 0;
      while (!stop) {
        LockSupport.parkNanos(500_000_000L);
        long elapsed = System.nanoTime() - t0;
        if (elapsed - lastProgress > 2_000_000_000L) {
          progress.update(tried.get(), faults.get());
          lastProgress = elapsed;
        }
        if (control) {
          stop = !history.check(ROWS, BusinessTable.rows(target, business)).isEmpty();
        } else if (elapsed >= minNanos) {
          History.Events e = events();
          stop =
              (waits ? e.claimsThatWaited() : e.takeoversAcrossOpenTransactions()) >= requiredEvents
                  && e.commitsBefore() >= requiredCommits
                  && e.commitsAfter() >= requiredCommits;
        }
        stop |= elapsed >= maxNanos;
      }
      List<String> stuck = new ArrayList<>();
      for (Thread t : workers) {
        try {
          t.join(30_000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        if (t.isAlive()) {
          stuck.add("liveness: " + t.getName() + " did not finish within 30 s after the run");
          t.interrupt();
        }
      }
      managers.forEach(LeaseManager::close);
      List<History.Violation> violations =
          history.check(ROWS, BusinessTable.rows(target, business));
      History.Events e = events();
      List<Count> counts = new ArrayList<>();
      if (waits) {
        counts.add(
            new Count(
                "claims that waited for a verified transaction of a holder frozen past its lease",
                e.claimsThatWaited(),
                requiredEvents));
      } else {
        counts.add(
            new Count(
                "takeovers while a verified transaction of the old term was open",
                e.takeoversAcrossOpenTransactions(),
                requiredEvents));
      }
      counts.add(new Count("commits under the old term", e.commitsBefore(), requiredCommits));
      counts.add(new Count("commits under the new term", e.commitsAfter(), requiredCommits));
      long committed =
          history.transactions().stream().filter(t -> t.end() == History.End.COMMITTED).count();
      counts.add(Count.info("claims", history.claims().size()));
      counts.add(Count.info("transactions committed", committed));
      counts.add(
          Count.info(
              "freezes past the lease",
              faultsByKind.getOrDefault(FaultKind.FREEZE, new AtomicLong()).get()));
      History.byBranch(violations)
          .forEach(
              (b, n) -> {
                if (n > 0) {
                  counts.add(Count.info("violations of " + b.name(), n));
                }
              });
      if (!broken.isEmpty()) {
        counts.add(Count.info("mutated statements", broken.hits()));
      }
      StringBuilder note = new StringBuilder("faults " + new TreeMap<>(faultsByKind));
      if (server.isEmpty() && !target.isSqlite()) {
        note.append("; no proxy faults: the database is not on a loopback address");
      }
      if (target.isSqlite()) {
        note.append("; no session kills or proxy: SQLite has no server");
      }
      if (fence != Fence.STRICT || !broken.isEmpty()) {
        note.append("; broken: ")
            .append(fence != Fence.STRICT ? fence + " fencing" : "")
            .append(broken.isEmpty() ? "" : (fence != Fence.STRICT ? ", " : "") + broken);
      }
      String failure = null;
      if (!violations.isEmpty() || !stuck.isEmpty()) {
        StringBuilder b =
            new StringBuilder(
                "seed "
                    + seed
                    + " (replay the fault choices with --seed "
                    + seed
                    + "; thread timing is real, so a replay is not exact)\n");
        stuck.forEach(v -> b.append("    ").append(v).append('\n'));
        violations.stream().limit(10).forEach(v -> b.append("    ").append(v).append('\n'));
        if (violations.size() > 10) {
          b.append("    ... ").append(violations.size() - 10).append(" more\n");
        }
        failure = b.toString();
      }
      return new PropertyResult(
          id,
          target.label(),
          tried.get(),
          faults.get(),
          counts,
          violations.size() + stuck.size(),
          failure,
          note.toString(),
          (System.nanoTime() - started) / 1_000_000);
    }

    History.Events events() {
      return history.events(TIMINGS.leaseDuration().toNanos(), 200_000_000L);
    }

    boolean running() {
      return !stop && System.nanoTime() - hardDeadline < 0;
    }

    void close() {
      managers.forEach(
          m -> {
            try {
              m.close();
            } catch (RuntimeException e) {
              // closing releases; the tables are dropped next anyway
            }
          });
      processes.forEach(FreezableProcess::close);
      proxies.forEach(LoopbackProxy::close);
      if (admin != null) {
        try {
          admin.close();
        } catch (SQLException e) {
          // nothing to do
        }
      }
    }

    /** What one process does: claim when it can, run transactions under the lease, release. */
    private final class Worker {
      final LeaseManager manager;
      final FreezableProcess process;
      final DataSource fenced;
      final LoopbackProxy proxy;
      final Random random;

      Worker(
          LeaseManager manager,
          FreezableProcess process,
          DataSource fenced,
          LoopbackProxy proxy,
          Random random) {
        this.manager = manager;
        this.process = process;
        this.fenced = fenced;
        this.proxy = proxy;
        this.random = random;
      }

      void run() {
        while (running()) {
          Optional<Lease> claimed;
          long attempt = System.nanoTime();
          try {
            claimed = manager.tryClaim(NAME);
          } catch (LeaseException e) {
            if (BusinessTable.isLockWait(e)) {
              history.waited(new History.Attempt(manager.instance(), attempt, System.nanoTime()));
            }
            claimed = Optional.empty();
          }
          if (claimed.isEmpty()) {
            // poll again soon: what a standby process does
            LockSupport.parkNanos((20 + random.nextInt(60)) * 1_000_000L);
            continue;
          }
          Lease lease = claimed.get();
          long completed = System.nanoTime();
          long dbMs = -1;
          try {
            dbMs = manager.databaseTimeMillis();
          } catch (LeaseException e) {
            // the claim stands; its database time is unknown
          }
          history.claimed(
              new History.Claim(lease.term(), lease.holder(), lease.instance(), completed, dbMs));
          lease.hold();
          int rounds = 3 + random.nextInt(6);
          // half the tenures (every tenure of a fence control) freeze in one transaction after the
          // first
          boolean freezes = (control && fence != Fence.STRICT) || random.nextBoolean();
          int freezeAt = freezes ? 1 + random.nextInt(rounds - 1) : -1;
          try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
            for (int k = 0; k < rounds && lease.isHeld() && running(); k++) {
              transaction(lease, k == freezeAt);
            }
          }
          try {
            lease.release();
          } catch (LeaseException e) {
            // it expires by itself
          }
        }
      }

      private FaultKind pick() {
        int r = random.nextInt(100);
        FaultKind k =
            r < 60
                ? FaultKind.NONE
                : r < 70
                    ? FaultKind.STALL
                    : r < 78
                        ? FaultKind.KILL
                        : r < 84
                            ? FaultKind.PROXY_DROP
                            : r < 90 ? FaultKind.PROXY_DELAY : FaultKind.FAIL_MIDWAY;
        if ((k == FaultKind.KILL && admin == null)
            || ((k == FaultKind.PROXY_DROP || k == FaultKind.PROXY_DELAY) && proxy == null)) {
          return FaultKind.NONE;
        }
        return k;
      }

      private void transaction(Lease lease, boolean freeze) {
        long txn = txnSeq.incrementAndGet();
        long start = System.nanoTime();
        tried.incrementAndGet();
        FaultKind fault = freeze ? FaultKind.FREEZE : pick();
        List<FreezePoint> points = List.copyOf(freezePoints);
        FreezePoint point = freeze ? points.get(random.nextInt(points.size())) : null;
        long freezeMs = FREEZE_MIN_MS + random.nextInt((int) FREEZE_SPREAD_MS);
        boolean early = random.nextBoolean();
        if (fault != FaultKind.NONE) {
          faults.incrementAndGet();
          faultsByKind.computeIfAbsent(fault, k -> new AtomicLong()).incrementAndGet();
        }
        long verified = 0;
        long invoked = 0;
        long observed = -1;
        long preCommitMs = -1;
        History.End end;
        String error = null;
        try (Connection c = fenced.getConnection()) {
          try {
            c.setAutoCommit(false);
            // the first statement of the transaction: the fence verifies the lease here
            long session = BusinessTable.sessionId(c, target);
            verified = System.nanoTime();
            if (point == FreezePoint.AFTER_VERIFY) {
              freezeHere(txn, freezeMs);
            } else if (early) {
              inject(fault, session);
            }
            BusinessTable.insert(c, business, txn, 1, lease.term());
            if (point == FreezePoint.AFTER_FIRST_WRITE) {
              freezeHere(txn, freezeMs);
            } else if (!early) {
              inject(fault, session);
            }
            if (fault == FaultKind.FAIL_MIDWAY) {
              throw new SQLException("application error after the first row (injected fault)");
            }
            for (int part = 2; part <= ROWS; part++) {
              BusinessTable.insert(c, business, txn, part, lease.term());
            }
            long[] seen = BusinessTable.observedTermAndTime(c, target, leases, NAME);
            observed = seen[0];
            preCommitMs = seen[1];
            if (point == FreezePoint.AT_COMMIT) {
              process.freezeAtNextCommit(freezeMs);
            }
            invoked = System.nanoTime();
            process.takeCommitSent();
            try {
              c.commit();
            } finally {
              if (point == FreezePoint.AT_COMMIT) {
                history.paused(
                    new History.Pause(manager.instance(), txn, invoked, System.nanoTime()));
              }
              // the commit left the process when the driver got it: after a freeze inside
              // commit(), later than the application's call
              invoked = Math.max(invoked, process.takeCommitSent());
            }
            end = History.End.COMMITTED;
          } catch (SQLException e) {
            try {
              c.rollback();
            } catch (SQLException r) {
              // a killed or reset session is rolled back by the server
            }
            throw e;
          }
        } catch (SQLException | RuntimeException e) {
          end = invoked == 0 ? History.End.FAILED : History.End.UNKNOWN;
          error = e.toString();
        }
        history.ended(
            new History.Transaction(
                txn,
                lease.term(),
                lease.holder(),
                manager.instance(),
                start,
                verified,
                invoked,
                System.nanoTime(),
                end,
                observed,
                preCommitMs,
                error));
      }

      /** The whole process stops here, inside its verified transaction, past its lease. */
      private void freezeHere(long txn, long millis) {
        long s = System.nanoTime();
        process.freeze(millis);
        process.gate();
        history.paused(new History.Pause(manager.instance(), txn, s, System.nanoTime()));
      }

      private void inject(FaultKind fault, long session) throws SQLException {
        switch (fault) {
          case STALL ->
              // this worker thread alone is slow; the keeper keeps renewing
              LockSupport.parkNanos((50 + random.nextInt(400)) * 1_000_000L);
          case KILL -> {
            synchronized (Run.this) {
              BusinessTable.kill(admin, target, session);
            }
          }
          case PROXY_DROP -> proxy.dropConnections();
          case PROXY_DELAY -> proxy.delay(100 + random.nextInt(500), 2_000);
          default -> {}
        }
      }
    }
  }
}
