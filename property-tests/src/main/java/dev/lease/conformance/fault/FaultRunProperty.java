package dev.lease.conformance.fault;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import java.io.IOException;
import java.net.URI;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * Real concurrency on the real database: three processes (each with its own lease manager, keeper
 * threads and fenced DataSource) compete for one lease and run multi-row business transactions
 * under it with STRICT fencing, while faults hit them: a process paused inside its transaction (its
 * threads stopped, its renewals refused), its session killed from an admin session, its connections
 * reset or its traffic delayed by a loopback TCP proxy, an application error in the middle of a
 * transaction. The recorded history must show one holder per term, no commit under term t after the
 * claim of term t+1 completed, and every transaction in the database whole or not at all.
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

  enum FaultKind {
    NONE,
    PAUSE,
    KILL,
    PROXY_DROP,
    PROXY_DELAY,
    FAIL_MIDWAY
  }

  @Override
  public String id() {
    return "fault-run";
  }

  @Override
  public String summary() {
    return "With real threads, paused processes, killed sessions, reset and delayed connections,"
        + " STRICT fencing lets no transaction verified under term t commit after the claim of term"
        + " t+1, every term has one holder, and no transaction is half-applied (invariants 1, 3, 4).";
  }

  @Override
  public PropertyResult check(Target target, Size size, long seed, Progress progress) {
    long started = System.nanoTime();
    String leases = target.newTable("leases");
    String business = target.newTable("business");
    Run run = new Run(target, leases, business, seed, size.pick(8_000, 60_000));
    try {
      return run.execute(progress, started);
    } catch (SQLException | IOException e) {
      throw new IllegalStateException(
          "fault run on " + target.label() + " could not be set up: " + e.getMessage(), e);
    } finally {
      run.close();
      target.dropQuietly(leases, business);
    }
  }

  /** One fault run: its processes, proxies, admin session and history. */
  private static final class Run {
    final Target target;
    final String leases;
    final String business;
    final long seed;
    final long durationMs;
    final History history = new History();
    final AtomicLong txnSeq = new AtomicLong();
    final AtomicLong tried = new AtomicLong();
    final AtomicLong faults = new AtomicLong();
    final Map<FaultKind, AtomicLong> faultsByKind = new ConcurrentHashMap<>();
    final List<LoopbackProxy> proxies = new ArrayList<>();
    final List<LeaseManager> managers = new ArrayList<>();
    Connection admin;
    long deadlineNanos;

    Run(Target target, String leases, String business, long seed, long durationMs) {
      this.target = target;
      this.leases = leases;
      this.business = business;
      this.seed = seed;
      this.durationMs = durationMs;
    }

    PropertyResult execute(Progress progress, long started) throws SQLException, IOException {
      LeaseManager.builder(target.dataSource())
          .table(leases)
          .instance("setup")
          .createTableIfMissing()
          .build()
          .close();
      BusinessTable.create(target, business);
      Optional<URI> server = target.loopbackServer();
      if (!target.isSqlite()) {
        admin = target.connect();
      }
      deadlineNanos = System.nanoTime() + durationMs * 1_000_000L;
      List<Thread> workers = new ArrayList<>();
      for (int i = 0; i < PROCESSES; i++) {
        LoopbackProxy proxy = null;
        DataSource base = target.dataSource();
        if (server.isPresent()) {
          proxy = new LoopbackProxy(server.get().getPort());
          proxies.add(proxy);
          base = target.dataSourceAt(proxy.port());
        }
        ProcessDataSource ds = new ProcessDataSource(base);
        LeaseManager manager =
            LeaseManager.builder(ds)
                .table(leases)
                .instance("process-" + i)
                .timings(TIMINGS)
                .failurePolicy(FailurePolicy.logOnly())
                .build();
        managers.add(manager);
        int id = i;
        LoopbackProxy p = proxy;
        Thread t =
            new Thread(
                () -> work(id, manager, ds, p, new Random(seed * 31 + id)),
                "fault-run-process-" + i);
        t.setDaemon(true);
        workers.add(t);
      }
      workers.forEach(Thread::start);
      long hardStop = deadlineNanos + 30_000_000_000L;
      String stuck = null;
      for (Thread t : workers) {
        while (t.isAlive() && System.nanoTime() < hardStop) {
          try {
            t.join(2_000);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            break;
          }
          progress.update(tried.get(), faults.get());
        }
        if (t.isAlive()) {
          stuck = t.getName() + " did not finish within 30 s after the run";
          t.interrupt();
        }
      }
      managers.forEach(LeaseManager::close);
      List<String> violations = history.check(true, ROWS, BusinessTable.rows(target, business));
      long maxTerm = history.claims().stream().mapToLong(History.Claim::term).max().orElse(0);
      long committed =
          history.transactions().stream().filter(t -> t.end() == History.End.COMMITTED).count();
      StringBuilder note =
          new StringBuilder(
              history.claims().size()
                  + " claims (up to term "
                  + maxTerm
                  + "), "
                  + committed
                  + " of "
                  + tried.get()
                  + " transactions committed, "
                  + history.contended()
                  + " were open across a takeover; faults "
                  + faultsByKind);
      if (server.isEmpty() && !target.isSqlite()) {
        note.append("; no proxy faults: the database is not on a loopback address");
      }
      if (target.isSqlite()) {
        note.append("; no session kills or proxy: SQLite has no server");
      }
      if (stuck != null) {
        violations.add("liveness: " + stuck);
      }
      if (history.claims().isEmpty()) {
        violations.add("liveness: no process ever claimed the lease");
      }
      String failure = null;
      if (!violations.isEmpty()) {
        StringBuilder b =
            new StringBuilder(
                "seed "
                    + seed
                    + " (replay the fault choices with --seed "
                    + seed
                    + "; thread timing is real, so a replay is not exact)\n");
        violations.stream().limit(10).forEach(v -> b.append("    ").append(v).append('\n'));
        failure = b.toString();
      }
      return new PropertyResult(
          "fault-run",
          target.label(),
          tried.get(),
          faults.get(),
          violations.size(),
          failure,
          note.toString(),
          (System.nanoTime() - started) / 1_000_000);
    }

    private boolean running() {
      return System.nanoTime() - deadlineNanos < 0 && !Thread.currentThread().isInterrupted();
    }

    private void work(
        int id, LeaseManager manager, ProcessDataSource ds, LoopbackProxy proxy, Random random) {
      DataSource fenced =
          FencedDataSource.wrap(ds, FencingOptions.builder().mode(FencingMode.STRICT).build());
      while (running()) {
        Optional<Lease> claimed;
        try {
          claimed = manager.tryClaim(NAME);
        } catch (LeaseException e) {
          claimed = Optional.empty();
        }
        if (claimed.isEmpty()) {
          // poll again soon: what a standby process does
          LockSupport.parkNanos((20 + random.nextInt(60)) * 1_000_000L);
          continue;
        }
        Lease lease = claimed.get();
        long dbMs = -1;
        try {
          dbMs = manager.databaseTimeMillis();
        } catch (LeaseException e) {
          // the claim stands; its database time is unknown
        }
        history.claimed(
            new History.Claim(
                lease.term(), lease.holder(), lease.instance(), System.nanoTime(), dbMs));
        lease.hold();
        int rounds = 3 + random.nextInt(12);
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          for (int k = 0; k < rounds && lease.isHeld() && running(); k++) {
            transaction(lease, fenced, ds, proxy, random);
          }
        }
        try {
          lease.release();
        } catch (LeaseException e) {
          // it expires by itself
        }
      }
    }

    private FaultKind pick(Random random, LoopbackProxy proxy) {
      int r = random.nextInt(100);
      FaultKind k =
          r < 65
              ? FaultKind.NONE
              : r < 75
                  ? FaultKind.PAUSE
                  : r < 81
                      ? FaultKind.KILL
                      : r < 86
                          ? FaultKind.PROXY_DROP
                          : r < 91 ? FaultKind.PROXY_DELAY : FaultKind.FAIL_MIDWAY;
      if ((k == FaultKind.KILL && admin == null)
          || ((k == FaultKind.PROXY_DROP || k == FaultKind.PROXY_DELAY) && proxy == null)) {
        return FaultKind.NONE;
      }
      return k;
    }

    private void transaction(
        Lease lease, DataSource fenced, ProcessDataSource ds, LoopbackProxy proxy, Random random) {
      long txn = txnSeq.incrementAndGet();
      long start = System.nanoTime();
      tried.incrementAndGet();
      FaultKind fault = pick(random, proxy);
      boolean early = random.nextBoolean();
      if (fault != FaultKind.NONE) {
        faults.incrementAndGet();
        faultsByKind.computeIfAbsent(fault, k -> new AtomicLong()).incrementAndGet();
      }
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
          if (early) {
            inject(fault, session, ds, proxy, random);
          }
          BusinessTable.insert(c, business, txn, 1, lease.term());
          if (!early) {
            inject(fault, session, ds, proxy, random);
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
          invoked = System.nanoTime();
          c.commit();
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
              start,
              invoked,
              System.nanoTime(),
              end,
              observed,
              preCommitMs,
              error));
    }

    private void inject(
        FaultKind fault, long session, ProcessDataSource ds, LoopbackProxy proxy, Random random)
        throws SQLException {
      switch (fault) {
        case PAUSE -> {
          // the whole process stops: this thread sleeps and its renewals cannot get out
          // mostly short stalls; one in three outlasts the lease, so a takeover meets an open
          // transaction
          long millis =
              random.nextInt(3) == 0 ? 1_600 + random.nextInt(1_000) : 50 + random.nextInt(400);
          ds.refuseFor(millis);
          LockSupport.parkNanos(millis * 1_000_000L);
        }
        case KILL -> {
          synchronized (this) {
            BusinessTable.kill(admin, target, session);
          }
        }
        case PROXY_DROP -> proxy.dropConnections();
        case PROXY_DELAY -> proxy.delay(100 + random.nextInt(500), 2_000);
        default -> {}
      }
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
      proxies.forEach(LoopbackProxy::close);
      if (admin != null) {
        try {
          admin.close();
        } catch (SQLException e) {
          // nothing to do
        }
      }
    }
  }
}
