package dev.lease.conformance.failover;

import static dev.lease.conformance.failover.FailoverProperty.NAME;
import static dev.lease.conformance.failover.FailoverProperty.STEADY;
import static dev.lease.conformance.failover.FailoverProperty.TIMINGS;
import static dev.lease.conformance.failover.FailoverProperty.awaitFor;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.conformance.Target;
import dev.lease.conformance.failover.FailoverProperty.Committed;
import dev.lease.conformance.failover.FailoverProperty.Granted;
import dev.lease.conformance.failover.FailoverProperty.LeaseRef;
import dev.lease.conformance.failover.FailoverProperty.Moment;
import dev.lease.core.LeaseManager;
import java.io.IOException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * One round of {@link FailoverProperty}: fresh tables, the holder processes on them, one failover,
 * the checks.
 */
final class FailoverRound implements HolderProcesses.Events {
  final FailoverProperty property;

  Target target;
  final HolderProcesses holders;
  final Random random;
  final int index;
  final Moment moment;
  final long lagMs;
  final FailoverTables tables;

  final AtomicBoolean fired = new AtomicBoolean();
  final CountDownLatch stalled = new CountDownLatch(1);
  final CountDownLatch failedOverLatch = new CountDownLatch(1);
  final AtomicLong killNanos = new AtomicLong();
  final AtomicLong doneNanos = new AtomicLong();

  /** When the promoted server took the probe's write ({@link #probeWrite}). */
  final AtomicLong writableNanos = new AtomicLong();

  /** The first lease step (a claim granted, a renewal) after the promotion. */
  final AtomicLong firstStepNanos = new AtomicLong(Long.MAX_VALUE);

  volatile Exception failoverError;
  final AtomicLong firedNanos = new AtomicLong();

  /** Where the round's time went: phase name and its end, in order (for the round's log line). */
  final List<Map.Entry<String, Long>> phases = new CopyOnWriteArrayList<>();

  final List<Granted> granted = new CopyOnWriteArrayList<>();

  /** The steady holder's claims (its own lease table: see {@link FailoverTables#steadyLease}). */
  final List<Granted> steadyGranted = new CopyOnWriteArrayList<>();

  final List<Committed> steadyCommitted = new CopyOnWriteArrayList<>();

  final List<Committed> committed = new CopyOnWriteArrayList<>();
  final Map<LeaseRef, Long> lostAt = new ConcurrentHashMap<>();
  final Map<LeaseRef, String> lossReasons = new ConcurrentHashMap<>();
  final Map<LeaseRef, Long> lastRenewed = new ConcurrentHashMap<>();

  /**
   * When the last successful renewal of each lease started (its local deadline counts from there):
   * one that started after the promotion cannot have reached the killed primary.
   */
  final Map<LeaseRef, Long> lastRenewalStarted = new ConcurrentHashMap<>();

  /** When each lease was released (a lease released after the kill was held across it). */
  final Map<LeaseRef, Long> releasedAt = new ConcurrentHashMap<>();

  final AtomicLong refused = new AtomicLong();
  final AtomicLong failed = new AtomicLong();
  final AtomicLong handOvers = new AtomicLong();

  /** The holders' last unexpected error, for a round that could not run. */
  final java.util.concurrent.atomic.AtomicReference<String> lastError =
      new java.util.concurrent.atomic.AtomicReference<>();

  /** Leases whose holders still believed in them at the end of the round. */
  final Set<LeaseRef> stillHeld = ConcurrentHashMap.newKeySet();

  boolean failedOver;
  long handOversBefore;
  long claimsVanished;
  long commitsVanished;
  long claimsUnknown;
  long termsReused;
  long leasesKept;
  long leasesLost;
  long mutated;
  long leadAgainMs = -1;
  final List<String> violations = new ArrayList<>();

  FailoverRound(
      FailoverProperty property, Target target, HolderProcesses holders, Random random, int index) {
    this.property = property;
    this.target = target;
    this.holders = holders;
    this.random = random;
    this.index = index;
    Moment generated = Moment.values()[random.nextInt(Moment.values().length)];
    this.moment = property.fixedMoment != null ? property.fixedMoment : generated;
    this.lagMs = random.nextInt(300);
    this.tables = new FailoverTables(target);
  }

  private void mark(String phase) {
    phases.add(Map.entry(phase, System.nanoTime()));
  }

  /** "prepare 812 ms, start 301 ms, ...": each phase's length, for the round's log line. */
  String timing() {
    StringBuilder b = new StringBuilder();
    long prev = -1;
    for (Map.Entry<String, Long> p : phases) {
      if (prev >= 0) {
        b.append(b.length() == 0 ? "" : ", ")
            .append(p.getKey())
            .append(' ')
            .append((p.getValue() - prev) / 1_000_000)
            .append(" ms");
      }
      prev = p.getValue();
    }
    return b.toString();
  }

  /**
   * Once the failover command returned, the promoted server must take a write within {@link
   * #WRITABLE_WITHIN}: a server that does not (one that inherited {@code synchronous_standby_names}
   * from the old primary and waits for a standby that is gone) would otherwise leave every holder
   * and every clean-up step waiting without a word.
   */
  private void probeWrite() throws IOException {
    long deadline = System.nanoTime() + property.writableWithin.toNanos();
    SQLException last;
    do {
      // a fresh connection each time: the client may find no primary until the promotion is
      // complete (pgjdbc's targetServerType=primary refuses a standby still in recovery)
      long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
      try (Connection c = target.connect()) {
        c.setNetworkTimeout(Runnable::run, (int) Math.min(Integer.MAX_VALUE, left));
        try (Statement s = c.createStatement()) {
          s.executeUpdate("INSERT INTO " + tables.probe + " (n) VALUES (1)");
        }
        if (!c.getAutoCommit()) {
          c.commit();
        }
        return;
      } catch (SQLException e) {
        last = e;
      }
      LockSupport.parkNanos(20_000_000L); // a poll with a deadline: the next connection attempt
    } while (System.nanoTime() - deadline < 0);
    throw new IOException(
        "the promoted server did not take a write within "
            + property.writableWithin.toMillis() / 1000.0
            + " s after the failover command returned ("
            + last.getMessage()
            + "): check that it is a primary that takes writes; a standby made with"
            + " pg_basebackup keeps the old primary's synchronous_standby_names, and then"
            + " waits for a synchronous standby that is gone",
        last);
  }

  /** Kill, promotion, first write taken, first lease step, first commit, in ms from the kill. */
  String milestones() {
    long kill = killNanos.get();
    if (kill == 0) {
      return "no failover (" + timing() + ")";
    }
    StringBuilder b =
        new StringBuilder(moment + ", lag " + lagMs + " ms: kill -> promoted ")
            .append((doneNanos.get() - kill) / 1_000_000)
            .append(" ms");
    if (writableNanos.get() > 0) {
      b.append(", -> writes taken ").append((writableNanos.get() - kill) / 1_000_000).append(" ms");
    }
    if (firstStepNanos.get() != Long.MAX_VALUE) {
      b.append(", -> first lease step ")
          .append((firstStepNanos.get() - kill) / 1_000_000)
          .append(" ms");
    }
    if (leadAgainMs >= 0) {
      b.append(", -> first commit ").append(leadAgainMs).append(" ms");
    }
    return b.toString();
  }

  private void laterStep(long nanos) {
    long done = doneNanos.get();
    if (done != 0 && nanos > done) {
      firstStepNanos.accumulateAndGet(nanos, Math::min);
    }
  }

  /** A holder process's event (see {@link HolderProcess}), on that child's reader thread. */
  @Override
  public void on(HolderProcesses.Child child, String[] f) {
    switch (f[0]) {
      case "granted" -> {
        Granted g = new Granted(ref(child, f), Long.parseLong(f[3]), Long.parseLong(f[4]));
        (child.steady ? steadyGranted : granted).add(g);
        laterStep(g.claimedNanos());
      }
      case "committed" ->
          (child.steady ? steadyCommitted : committed)
              .add(
                  new Committed(
                      f[2], Long.parseLong(f[1]), Long.parseLong(f[3]), Long.parseLong(f[4])));
      case "lost" -> {
        lostAt.putIfAbsent(ref(child, f), Long.parseLong(f[3]));
        lossReasons.putIfAbsent(ref(child, f), f[4]);
      }
      case "renewed" -> {
        LeaseRef lease = ref(child, f);
        lastRenewed.put(lease, Long.parseLong(f[3]));
        laterStep(Long.parseLong(f[3]));
        long started = Long.parseLong(f[4]);
        if (started >= 0) {
          lastRenewalStarted.merge(lease, started, Math::max);
        }
      }
      case "released" -> releasedAt.putIfAbsent(ref(child, f), Long.parseLong(f[3]));
      case "handover" -> handOvers.incrementAndGet();
      case "refused" -> refused.incrementAndGet();
      case "failed" -> {
        failed.incrementAndGet();
        lastError.set("holder " + child.id + ": " + f[1]);
      }
      case "fire" -> {
        // on a thread of its own: this reader goes on reading the child's events meanwhile
        Thread t =
            new Thread(
                () -> {
                  fire(f[1]);
                  try {
                    child.send("go");
                  } catch (IOException e) {
                    lastError.set(e.toString());
                  }
                },
                "failover-fire-" + child.id);
        t.setDaemon(true);
        t.start();
      }
      default -> lastError.set("holder " + child.id + " sent " + String.join(" ", f));
    }
  }

  private LeaseRef ref(HolderProcesses.Child child, String[] f) {
    return new LeaseRef(child.steady, Long.parseLong(f[1]), f[2]);
  }

  /** The leases the holders' own {@code Lease.isHeld()} says they hold, now. */
  private Set<LeaseRef> held() throws IOException {
    holders.sendAll("held");
    Set<LeaseRef> out = new HashSet<>();
    for (HolderProcesses.Child c : holders.children()) {
      String[] a = c.await("held", 10);
      for (int i = 1; i + 1 < a.length; i += 2) {
        out.add(new LeaseRef(c.steady, Long.parseLong(a[i]), a[i + 1]));
      }
    }
    return out;
  }

  void run() throws Exception {
    mark("begin");
    property.hook.prepare();
    target = property.hook.target(target);
    mark("prepare");
    List<HikariDataSource> pools = new ArrayList<>();
    boolean started = false;
    try {
      HikariDataSource admin = pool("admin", 2, 15_000);
      pools.add(admin);
      try (LeaseManager creator =
          LeaseManager.builder(admin)
              .table(tables.lease)
              .createTableIfMissing()
              .timings(TIMINGS)
              .build()) {
        try (Connection c = admin.getConnection()) {
          tables.create(c, target);
        }
        creator.describe(NAME); // creates nothing; checks the table answers
      }
      try (LeaseManager steadyTable =
          LeaseManager.builder(admin)
              .table(tables.steadyLease)
              .createTableIfMissing()
              .timings(TIMINGS)
              .build()) {
        steadyTable.describe(STEADY);
      }
      property.hook.settle(); // the replica has the round's tables before anything can be lost
      holders.awaitReady(); // the first round's: they started meanwhile
      holders.events(this);
      started = true;
      for (HolderProcesses.Child c : holders.children()) { // the last one is the steady holder
        c.send(
            "round",
            Integer.toString(index),
            target.url(),
            target.user() == null ? "" : target.user(),
            target.password() == null ? "" : target.password(),
            c.steady ? tables.steadyLease : tables.lease,
            c.steady ? tables.steadyData : tables.data,
            Boolean.toString(c.steady),
            property.broken.name(),
            Long.toString(random.nextLong()),
            Integer.toString(c.id));
      }
      for (HolderProcesses.Child c : holders.children()) {
        c.await("started", 70); // a first round waits up to 30 s per pool
      }
      mark("start");

      // Warm up: hand-overs and commits replicated before the failover may fire.
      if (!awaitFor(
          () ->
              handOvers.get() >= 2
                  && committed.size() >= 4
                  && !steadyCommitted.isEmpty(), // the steady holder holds and writes
          Duration.ofSeconds(20))) {
        throw new IOException(
            "the holders did not hand over twice and commit four times within 20 s before the"
                + " failover; last error: "
                + lastError.get());
      }
      mark("warm-up");
      holders.sendAll("arm", moment.name());
      // A holder reaches the moment within a few transactions; if none does, fire anyway.
      if (!awaitFor(fired::get, Duration.ofSeconds(5))) {
        fire("round " + index);
      }
      if (!failedOverLatch.await(150, TimeUnit.SECONDS)) {
        throw new IOException("the failover did not finish within 150 s");
      }
      if (failoverError != null) {
        throw failoverError;
      }
      phases.add(Map.entry("to the moment", firedNanos.get()));
      phases.add(Map.entry("stall and lag", killNanos.get()));
      phases.add(Map.entry("kill and promote", doneNanos.get()));
      failedOver = true;
      handOversBefore = granted.stream().filter(g -> g.claimedNanos() < killNanos.get()).count();
      // Afterwards: until a holder commits twice on the promoted server, and until every holder
      // whose claim may have vanished has had to find out: each lease asked for before the kill
      // is given up (lost or released) or renewed by a renewal that started after the promotion
      // (so on the promoted server, which therefore has its claim), or else a local deadline
      // (+0.5 s) has passed since the promotion, by when every holder of a vanished claim must
      // have stopped (the wait before: always that long). A vanished claim never settles by a
      // renewal, so its holder is still checked at the same deadline (stillHeld below).
      long done = doneNanos.get();
      awaitFor(
          () -> committed.stream().filter(c -> c.nanos() > done).count() >= 2,
          Duration.ofSeconds(30));
      awaitFor(
          () ->
              settled(done)
                  || System.nanoTime() - done > TIMINGS.localDeadline().toNanos() + 500_000_000L,
          Duration.ofSeconds(10));
      committed.stream()
          .filter(c -> c.nanos() > done)
          .mapToLong(Committed::nanos)
          .min()
          .ifPresent(n -> leadAgainMs = (n - killNanos.get()) / 1_000_000);
      mark("after");
      // The state of every lease before the holders stop and release: what each holder's own
      // lease says, and the events that reached this process before that answer (a child's
      // events and its answer come in order on one pipe).
      stillHeld.addAll(held());
      List<Granted> snapshotGranted = List.copyOf(granted);
      List<Granted> snapshotSteady = List.copyOf(steadyGranted);
      Map<LeaseRef, Long> snapshotLost = Map.copyOf(lostAt);
      stop();
      started = false;
      mark("stop");
      // The admin pool's connections predate the failover: the check reads on a new one (an old
      // one to the killed MariaDB primary is reconnected by Connector/J, which then fails the
      // statement with "Driver has reconnect connection": a round that could not run, measured).
      admin.getHikariPoolMXBean().softEvictConnections();
      check(admin, snapshotGranted, snapshotLost);
      checkSteady(admin, snapshotSteady, snapshotLost);
      mark("check");
    } finally {
      if (started) {
        try {
          stop();
        } catch (IOException | RuntimeException e) {
          // the round's result (or its error) stands
        }
      }
      pools.forEach(HikariDataSource::close);
      if (violations.isEmpty() || !Boolean.getBoolean("lease.failover.keepTables")) {
        dropWithin(Duration.ofSeconds(30), tables.all()); // bounded: the server may not answer
      }
      mark("clean-up");
    }
  }

  /**
   * Drops the round's tables on a connection whose every wait ends within {@code bound}: a clean-up
   * never hangs the run (a promoted server that does not take writes answers nothing).
   */
  private void dropWithin(Duration bound, String... names) {
    try (Connection c = target.connect()) {
      c.setNetworkTimeout(Runnable::run, (int) bound.toMillis());
      try (Statement s = c.createStatement()) {
        for (String t : names) {
          try {
            s.execute("DROP TABLE IF EXISTS " + t);
          } catch (SQLException e) {
            if (c.isClosed()) {
              break; // the bound passed: the runner's final sweep tries again
            }
          }
        }
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      lastError.set("clean-up: " + e.getMessage());
    }
  }

  /** Stops every holder's round (each closes its manager and pools) and waits for them. */
  private void stop() throws IOException {
    holders.sendAll("stop");
    for (HolderProcesses.Child c : holders.children()) {
      mutated += Long.parseLong(c.await("stopped", 60)[1]);
    }
  }

  /**
   * Called when a holder reached the round's armed moment; starts the failover (once) and returns
   * once replication has stalled, so what the holder does next is what the failover cuts.
   */
  private void fire(String why) {
    if (!fired.compareAndSet(false, true)) {
      return;
    }
    firedNanos.set(System.nanoTime());
    try {
      holders.sendAll("disarm");
    } catch (IOException e) {
      lastError.set(e.toString());
    }
    Thread killer =
        new Thread(
            () -> {
              try {
                property.hook.stall();
                stalled.countDown();
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(lagMs));
                killNanos.set(System.nanoTime());
                property.hook.failOver();
                doneNanos.set(System.nanoTime());
                probeWrite();
                writableNanos.set(System.nanoTime());
              } catch (Exception e) {
                failoverError = e;
              } finally {
                stalled.countDown();
                failedOverLatch.countDown();
              }
            },
            "failover-" + why);
    killer.setDaemon(true);
    killer.start();
    try {
      stalled.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * True when no lease asked for before the promotion completed ({@code done}) is still believed in
   * without proof from the promoted server: each is no longer held (lost, released) or has a
   * renewal that started after {@code done} (so it ran on the promoted server: the killed primary
   * was dead by then).
   */
  private boolean settled(long done) {
    Set<LeaseRef> held;
    try {
      held = held();
    } catch (IOException e) {
      lastError.set(e.toString());
      return false;
    }
    for (Granted g : concat(granted, steadyGranted)) {
      // asked before the promotion completed: the script reads the nodes before it kills, so a
      // claim asked just after killNanos may still have run on the old primary
      if (g.askedNanos() < done && held.contains(g.lease())) {
        Long started = lastRenewalStarted.get(g.lease());
        if (started == null || started <= done) {
          return false;
        }
      }
    }
    return true;
  }

  /**
   * A pool on the target URL (the round's own: tables and checks). The borrow waits long enough for
   * a multi-host URL to try a dead host and a standby before the primary.
   */
  private HikariDataSource pool(String name, int size, long connectionTimeoutMs) {
    HikariConfig config = new HikariConfig();
    config.setPoolName("failover-" + index + "-" + name);
    config.setJdbcUrl(target.url());
    config.setUsername(target.user());
    config.setPassword(target.password());
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(connectionTimeoutMs);
    config.setValidationTimeout(500);
    config.setInitializationFailTimeout(-1);
    return new HikariDataSource(config);
  }

  private static List<Granted> concat(List<Granted> a, List<Granted> b) {
    List<Granted> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  /**
   * The steady holder's lease, held across the failover with no statement in flight: kept when a
   * renewal on the promoted server succeeded (its WHERE matched holder and term there), lost when
   * the holder was told; anything else, once the local deadline has passed since the promotion, is
   * a holder still believing in a lease nothing renewed.
   */
  private void checkSteady(
      HikariDataSource admin, List<Granted> steadyAtEnd, Map<LeaseRef, Long> lostAtEnd)
      throws SQLException {
    long kill = killNanos.get();
    if (property.synchronous) {
      // its acknowledged commits are on the promoted server, as the hand-over lease's
      Set<Long> kept = new HashSet<>();
      try (Connection c = admin.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT txn FROM " + tables.steadyData)) {
        while (rs.next()) {
          kept.add(rs.getLong(1));
        }
      }
      for (Committed c : steadyCommitted) {
        if (c.nanos() < doneNanos.get() && !kept.contains(c.txn())) {
          violations.add(
              "the steady holder's acknowledged commit "
                  + c.txn()
                  + " vanished though replication is synchronous");
        }
      }
    }
    for (Granted g : steadyAtEnd) {
      LeaseRef lease = g.lease();
      if (g.claimedNanos() >= kill || releasedAt.getOrDefault(lease, Long.MAX_VALUE) <= kill) {
        continue;
      }
      Long renewed = lastRenewed.get(lease);
      if (renewed != null && renewed > doneNanos.get()) {
        leasesKept++;
      } else if (lostAtEnd.containsKey(lease)) {
        leasesLost++;
      } else if (stillHeld.contains(lease)) {
        violations.add(
            "the steady holder still believes it holds term "
                + lease.term()
                + " with no renewal on the promoted server, "
                + (System.nanoTime() - doneNanos.get()) / 1_000_000
                + " ms after the failover");
      }
    }
  }

  private void check(
      HikariDataSource admin, List<Granted> grantedAtEnd, Map<LeaseRef, Long> lostAtEnd)
      throws SQLException {
    Map<Long, FailoverTables.Claim> claims;
    List<FailoverTables.Row> rows;
    try (Connection c = admin.getConnection()) {
      claims = tables.claims(c);
      rows = tables.rows(c);
    }
    if (tables.claimsFromLog >= 0 && tables.claimsFromLog < tables.termsInHistory) {
      // MariaDB: a claim the row's history has and the binary log scan did not recognise would
      // be checked against no predecessor (invariant 1 skipped for it); none at all, though the
      // round handed over at least twice, would check nothing
      violations.add(
          "inconclusive: "
              + tables.claimsFromLog
              + " of the "
              + tables.termsInHistory
              + " claims of lease table "
              + tables.lease
              + " found in the promoted server's binary log, so invariant 1 was not checked on"
              + " every claim");
    }
    FailoverTables.checkHistory(claims, rows, violations);
    // Claims the holders were told of, against the promoted history.
    long kill = killNanos.get();
    Set<String> grantedKeys = new HashSet<>();
    for (Granted g : grantedAtEnd) {
      LeaseRef lease = g.lease();
      grantedKeys.add(lease.term() + "/" + lease.holder());
      FailoverTables.Claim claim = claims.get(lease.term());
      boolean kept = claim != null && lease.holder().equals(claim.holder());
      if (!kept) {
        claimsVanished++;
        if (claim != null) {
          termsReused++; // the new timeline granted the same number to another holder
          violations.add(
              "term "
                  + lease.term()
                  + ", acknowledged to holder "
                  + lease.holder()
                  + " before the failover, was granted again to holder "
                  + claim.holder()
                  + " on the promoted server: a fencing token repeated (invariant 1)");
        }
        if (property.synchronous) {
          violations.add(
              "the acknowledged claim of term "
                  + lease.term()
                  + " vanished though replication is synchronous");
        }
        // Its holder must have found out: lost, with the event, before the round ended.
        if (stillHeld.contains(lease)) {
          violations.add(
              "the holder of the vanished claim of term "
                  + lease.term()
                  + " still believes it holds the lease "
                  + (System.nanoTime() - doneNanos.get()) / 1_000_000
                  + " ms after the failover");
        }
      } else if (g.claimedNanos() < kill && releasedAt.getOrDefault(lease, Long.MAX_VALUE) > kill) {
        // held across the failover (claimed before the kill, not released before it): kept when
        // a renewal after the promotion succeeded, whatever its holder did with it afterwards
        Long renewed = lastRenewed.get(lease);
        if (renewed != null && renewed > doneNanos.get()) {
          leasesKept++;
        } else if (lostAtEnd.containsKey(lease)) {
          leasesLost++;
        }
      }
    }
    for (FailoverTables.Claim claim : claims.values()) {
      if (claim.holder() != null && !grantedKeys.contains(claim.term() + "/" + claim.holder())) {
        claimsUnknown++;
      }
    }
    Set<Long> keptTxns = new HashSet<>();
    rows.forEach(r -> keptTxns.add(r.txn()));
    for (Committed c : committed) {
      if (c.nanos() < doneNanos.get() && !keptTxns.contains(c.txn())) {
        commitsVanished++;
        if (property.synchronous) {
          violations.add(
              "acknowledged commit "
                  + c.txn()
                  + " of term "
                  + c.term()
                  + " vanished though replication is synchronous");
        }
      }
    }
  }
}
