package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Leader mode with two JVMs of the legacy application: the leader is stopped (kill -STOP) inside an
 * open transaction for longer than its lease, the replica takes over and writes, the old leader is
 * resumed. No row it wrote may be committed after the successor's claim. The negative control runs
 * the old leader without the agent: the same checker must then report its stale write.
 */
class LeaderModeIT {

  private static final String LEASE = "legacy-leader";

  /**
   * Short timings: lease 2 s (renew every 266 ms, local deadline 1333 ms). On SQLite every renewal
   * is a write to the application's database file, and a write of another connection makes a WAL
   * transaction that read before it fail at its own write (SQLITE_BUSY_SNAPSHOT): renewing every
   * second leaves the legacy application's 300 ms transactions a fair chance to commit.
   */
  static String timings(TestDatabase db) {
    return db.isSqlite()
        ? "lease-duration=3s,renew-interval=1s,local-deadline=2s," + "attempt-timeout=800ms"
        : "lease-duration=2s";
  }

  /**
   * Every database on Java 17; Java 25 on PostgreSQL (what Java 25 changes is the weaving into the
   * application, not the database's part; MethodsModeIT runs all three on both).
   */
  static Stream<Arguments> cases() {
    return Stream.concat(
        LegacyDatabase.databases().map(db -> Arguments.of(db, "17")),
        Stream.of(Arguments.of(TestDatabase.POSTGRESQL, "25")));
  }

  /** Every database on Java 17 and on Java 25. */
  static Stream<Arguments> everyDatabaseOnBothJdks() {
    return Stream.concat(
        LegacyDatabase.databases().map(db -> Arguments.of(db, "17")),
        LegacyDatabase.databases().map(db -> Arguments.of(db, "25")));
  }

  static String java(String version) {
    if (version.equals("25")) {
      Assumptions.assumeTrue(
          Files.isExecutable(Path.of(AppProcess.JAVA_25)),
          "Java 25 is not installed at " + AppProcess.JAVA_25 + "; skipping the Java 25 run");
      return AppProcess.JAVA_25;
    }
    return AppProcess.JAVA_17;
  }

  private static String leaderArgs(LegacyDatabase d, String instance) {
    return d.agentArgs(
        "mode=leader,lease="
            + LEASE
            + ","
            + timings(d.db)
            + ",instance="
            + instance
            // the old leader claims again after the new one dies (PoolLeaderModeIT: halt)
            + ",on-loss=refuse"
            // debug: A is stopped right after a renewal, seen in its log
            + ",log-level=debug");
  }

  @ParameterizedTest(name = "{0} java {1}")
  @MethodSource("cases")
  void staleLeaderCannotCommitAfterTakeover(TestDatabase db, String version) throws Exception {
    String java = java(version);
    try (LegacyDatabase d = new LegacyDatabase(db);
        AppProcess a =
            AppProcess.start(
                "A", java, leaderArgs(d, "A"), "writer", d.url, d.events, "A", "hikari")) {
      a.awaitLine(l -> l.startsWith("COMMITTED"), "a commit of the leader A");
      assertEquals("A", d.holder(LEASE).orElseThrow().instance());
      try (AppProcess b =
          AppProcess.start(
              "B", java, leaderArgs(d, "B"), "writer", d.url, d.events, "B", "hikari")) {
        int refused = b.awaitLine(l -> l.startsWith("REFUSED"), "a refusal of the replica B");
        assertTrue(b.lines().get(refused).contains("LeaseLostSQLException"), b.describe());
        assertTrue(d.committed("B").isEmpty(), "the replica B committed while A led");

        Takeover t = stopLeaderInsideATransaction(d, a, b);

        // the stale transaction and the next one are refused, and A commits nothing any more
        // from the open transaction's first line: it may have ended just before the stop (the
        // stop waits for a renewal), and then its outcome precedes the resumption
        int openAt = a.lines().indexOf("TX-OPEN " + t.openSeq);
        int outcome =
            a.awaitLine(
                openAt >= 0 ? openAt : t.resumedAt,
                l ->
                    l.startsWith("REFUSED " + t.openSeq + " ")
                        || l.startsWith("COMMITTED " + t.openSeq),
                "the outcome of A's open transaction");
        a.awaitLine(
            outcome + 1,
            l -> l.startsWith("REFUSED") || l.startsWith("COMMITTED"),
            "the outcome of A's next transaction");
        Set<Integer> stale = t.checker.committedAfterTakeover();
        assertEquals(
            Set.of(),
            stale,
            "rows of the old leader A committed after B's claim of term " + t.term + a.describe());
        List<String> after = a.lines().subList(t.resumedAt, a.lines().size());
        System.out.println(
            db
                + " java "
                + version
                + ": B claimed term "
                + t.term
                + "; A after it resumed: "
                + after);
        assertTrue(after.stream().noneMatch(l -> l.startsWith("COMMITTED")), a.describe());
        assertTrue(after.stream().anyMatch(l -> l.contains("LeaseLostSQLException")), a.describe());
        assertEquals("B", d.holder(LEASE).orElseThrow().instance());
        // Java 24+ warns on stderr when sun.misc.Unsafe is used (JEP 498); the agent's ByteBuddy
        // runs in its safe mode, which uses none
        assertFalse(a.stderr().contains("sun.misc.Unsafe"), a.stderr());
      }
      // B is gone (killed, nothing released): A, which lost the lease, claims it again and writes
      long term = awaitHolder(d, LEASE, "A", a);
      assertTrue(term > 2, "A's new term " + term);
      int now = a.lines().size();
      a.awaitLine(now, l -> l.startsWith("COMMITTED"), "a commit of A as leader again");
    }
  }

  /** Negative control: the same run with the old leader lacking the agent is caught. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.agent.LegacyDatabase#databases")
  void withoutTheAgentTheStaleLeadersWriteIsCommittedAfterTakeover(TestDatabase db)
      throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(db);
        AppProcess b =
            AppProcess.start(
                "B",
                AppProcess.JAVA_17,
                leaderArgs(d, "B"),
                "writer",
                d.url,
                d.events,
                "B",
                "hikari")) {
      b.awaitLine(l -> l.startsWith("COMMITTED"), "a commit of the agent's leader B");
      // SQLite: B's STRICT transactions hold the write lock from their first statement, so A's
      // deferred transactions (read, pause, write) would always find their snapshot stale; A takes
      // the write lock at BEGIN instead, as a SQLite application that writes would
      String urlOfA = d.db.isSqlite() ? d.url + "&transaction_mode=IMMEDIATE" : d.url;
      try (AppProcess a =
          AppProcess.start(
              "A", AppProcess.JAVA_17, null, "writer", urlOfA, d.events, "A", "hikari")) {
        int open = a.awaitLine(l -> l.startsWith("TX-OPEN"), "an open transaction of A");
        a.pause();
        StaleWriteChecker checker = new StaleWriteChecker(d, "A");
        a.resume();
        // on SQLite the open transaction itself fails (its WAL snapshot went stale when B wrote);
        // the next one, begun after B's claim, commits unfenced
        a.awaitLine(open, l -> l.startsWith("COMMITTED"), "a commit of A after it resumed");
        Set<Integer> stale = checker.committedAfterTakeover();
        assertFalse(stale.isEmpty(), "the checker missed the unfenced stale write" + a.describe());
      }
    }
  }

  /**
   * Shutdown of a replica while its claim is in flight (the claim's statement waits on a row lock
   * the test holds) and while the application's own shutdown hook still runs: the election stops
   * first and gives back what its claim got, then the manager closes; nothing is logged as a
   * warning or an error, the lease is not left claimed, and the JVM exits as signalled.
   */
  @Test
  void aReplicaShutDownWithItsClaimInFlightEndsQuietlyAndHoldsNothing_postgresql()
      throws Exception {
    String trouble = shutDownWithAClaimInFlight(List.of());
    assertNull(trouble, trouble);
  }

  /**
   * Negative control: the manager closes while the election still runs (no ordered stop): the claim
   * that completes after the close meets a closed manager, and the same check sees the error.
   */
  @Test
  void withoutTheOrderedShutdownTheElectionMeetsAClosedManager_postgresql() throws Exception {
    String trouble = shutDownWithAClaimInFlight(List.of(UNORDERED));
    assertNotNull(trouble, "the check missed the unordered shutdown");
    System.out.println("unordered shutdown: " + trouble);
  }

  private static final String UNORDERED = "-Dlease.agent.testing.disable=ordered-shutdown";

  /** What went wrong at the shutdown of a replica whose claim was in flight, or null. */
  private static String shutDownWithAClaimInFlight(List<String> jvmOptions) throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL)) {
      d.holdLeaseElsewhere(LEASE);
      // default timings: a poll every 2 s, each statement bounded by 5 s (the lock wait below)
      String args = d.agentArgs("mode=leader,lease=" + LEASE + ",lease-duration=15s,instance=B");
      try (AppProcess b = d.writer("B", args, jvmOptions, "hikari");
          Connection locker = d.dataSource().getConnection()) {
        b.awaitStderr(0, "this process waits as a replica", "B waiting as a replica");
        b.send("slow-shutdown");
        b.awaitLine(l -> l.equals("SLOW-SHUTDOWN"), "B's slow shutdown hook");
        // the lease held elsewhere runs out in 1.5 s while this open transaction keeps its row
        // locked: B's next poll finds it expired and its claim (one UPDATE ... FOR UPDATE) waits
        // for this transaction
        long termBefore = d.holder(LEASE).orElseThrow().term();
        try (PreparedStatement shorten =
            locker.prepareStatement(
                "UPDATE "
                    + d.leases
                    + " SET expires_at_ms = (extract(epoch from clock_timestamp()) * 1000)::bigint"
                    + " + 1500 WHERE name = ?")) {
          shorten.setString(1, LEASE);
          shorten.executeUpdate();
        }
        locker.setAutoCommit(false);
        try (PreparedStatement lock =
            locker.prepareStatement(
                "SELECT term FROM " + d.leases + " WHERE name = ? FOR UPDATE")) {
          lock.setString(1, LEASE);
          lock.executeQuery().close();
        }
        awaitClaimWaitingOnLock(d);
        int from = b.stderrLength();
        b.terminate();
        b.awaitStderr(from, "shutting down", "the agent's shutdown hook");
        b.awaitLine(l -> l.equals("SHUTDOWN-HOOK"), "the application's shutdown hook");
        if (jvmOptions.contains(UNORDERED)) {
          // the negative control: let the claim complete only once the manager closed under it
          // (without this wait the claim may still win the race and the control see nothing)
          b.awaitStderr(from, "leases released", "the manager closed while the claim waited");
        }
        locker.commit(); // the claim completes now, while both hooks run
        // B's claim, released by whoever ended it (the election, or the closed manager)
        long deadline = System.nanoTime() + AppProcess.TIMEOUT.toNanos();
        while (d.expiresAt(LEASE).orElse(1L) != 0
            || d.holder(LEASE).orElseThrow().term() == termBefore) {
          assertTrue(System.nanoTime() < deadline, "B's claim was not released" + b.describe());
          Thread.sleep(50); // polling the database with a deadline
        }
        b.send("exit"); // the application's hook ends
        int exit = b.awaitExit();
        String after = b.stderr().substring(from);
        System.out.println("B after SIGTERM (exit " + exit + "):\n" + after);
        if (exit != 143) {
          return "exit status " + exit + b.describe();
        }
        return shutdownTrouble(after);
      }
    }
  }

  /**
   * What a quiet shutdown never logs (stderr from the SIGTERM on): an error, or a warning other
   * than the application's refused transactions (a replica's, expected before and during it).
   */
  static String shutdownTrouble(String stderrAfterSignal) {
    for (String line : stderrAfterSignal.lines().toList()) {
      if (line.contains(" ERROR ")
          || (line.contains(" WARN ") && !line.contains(" TransactionFence "))) {
        return "at shutdown: " + line;
      }
    }
    return null;
  }

  /** Until B's lease statement waits on the row lock of the test's open transaction. */
  private static void awaitClaimWaitingOnLock(LegacyDatabase d) throws Exception {
    long deadline = System.nanoTime() + AppProcess.TIMEOUT.toNanos();
    try (Connection c = d.dataSource().getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    + " AND query LIKE ?")) {
      ps.setString(1, "%" + d.leases + "%");
      while (true) {
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (rs.getInt(1) > 0) {
            return;
          }
        }
        assertTrue(System.nanoTime() < deadline, "B's claim never waited on the lock");
        Thread.sleep(50); // polling the database with a deadline
      }
    }
  }

  /** What the takeover left to check; openSeq: A's transaction under way (or next) at the stop. */
  record Takeover(String openSeq, long term, int resumedAt, StaleWriteChecker checker) {}

  /**
   * Stops A, waits until B holds the lease and committed twice, then resumes A. On the servers A is
   * stopped right after it opened a transaction (its first statement ran and verified, its write is
   * yet to come): the server ends that transaction (idle-in-transaction timeout) so that B can
   * claim. On SQLite, where the verify of a STRICT transaction takes the database's single write
   * lock and no server can end a stopped process's transaction, no one can write (B's claim
   * included) until A resumes (docs/benchmarks.md, takeover table); A is stopped between two
   * transactions there.
   */
  private static Takeover stopLeaderInsideATransaction(LegacyDatabase d, AppProcess a, AppProcess b)
      throws Exception {
    return stopLeaderInsideATransaction(d, LEASE, a, b);
  }

  static Takeover stopLeaderInsideATransaction(
      LegacyDatabase d, String lease, AppProcess a, AppProcess b) throws Exception {
    String openSeq;
    if (d.db.isSqlite()) {
      // between two transactions, and right after a renewal of A's lease ended (the next is a renew
      // interval away): A is stopped holding no lock
      a.send("hold");
      int held =
          a.awaitLine(
              a.lines().size(), l -> l.startsWith("HELD "), "A held between" + " transactions");
      openSeq = Integer.toString(Integer.parseInt(a.lines().get(held).substring(5)) + 1);
      a.awaitStderr(a.stderrLength(), "renewed lease " + lease, "a renewal of A's lease");
      a.pause();
      a.send("go"); // read when A resumes
    } else {
      openSeq = stopInsideATransactionBetweenRenewals(a, lease);
    }
    long term = awaitHolder(d, lease, "B", a, b);
    // A is stopped: every row of A committed from here on was committed after B's claim
    StaleWriteChecker checker = new StaleWriteChecker(d, "A");
    int bFrom = b.lines().size();
    int first = b.awaitLine(bFrom, l -> l.startsWith("COMMITTED"), "a commit of the new leader B");
    b.awaitLine(first + 1, l -> l.startsWith("COMMITTED"), "a second commit of B");
    int resumedAt = a.lines().size();
    a.resume();
    return new Takeover(openSeq, term, resumedAt, checker);
  }

  /**
   * Stops A inside an open transaction, right after a renewal of its lease committed, so that the
   * stop never lands inside a renewal: there A's lease session keeps the lease row locked until the
   * server ends it (the attempt timeout, PausedLeaseSessionTest in lease-core; before that bound
   * existed, for as long as A was stopped). The next renewal is a renew interval away (266 ms), the
   * transaction sleeps 300 ms after its first statement; if the transaction ended before the
   * renewal, try the next one.
   *
   * @return the seq of the open transaction
   */
  private static String stopInsideATransactionBetweenRenewals(AppProcess a, String lease)
      throws InterruptedException {
    for (int attempt = 0; ; attempt++) {
      int open =
          a.awaitLine(a.lines().size(), l -> l.startsWith("TX-OPEN "), "an open transaction of A");
      String seq = a.lines().get(open).substring("TX-OPEN ".length());
      a.awaitStderr(a.stderrLength(), "renewed lease " + lease, "a renewal of A's lease");
      a.pause();
      boolean ended =
          a.lines().stream()
              .skip(open)
              .anyMatch(l -> l.equals("COMMITTED " + seq) || l.startsWith("REFUSED " + seq + " "));
      if (!ended || attempt == 10) {
        return seq;
      }
      a.resume();
    }
  }

  static long awaitHolder(LegacyDatabase d, String lease, String instance, AppProcess... apps)
      throws Exception {
    long deadline = System.nanoTime() + AppProcess.TIMEOUT.toNanos();
    while (System.nanoTime() < deadline) {
      var h = d.holder(lease);
      if (h.isPresent() && h.get().instance().equals(instance)) {
        return h.get().term();
      }
      Thread.sleep(50); // polling the database with a deadline, not a synchronisation by time
    }
    StringBuilder why = new StringBuilder();
    for (AppProcess app : apps) {
      why.append(app.describe());
    }
    throw new AssertionError(
        instance
            + " did not claim "
            + lease
            + " within "
            + AppProcess.TIMEOUT.toSeconds()
            + " s; holder "
            + d.holder(lease)
            + why);
  }

  /**
   * The safety check, through the database: the rows a writer has committed, snapshotted after the
   * successor's claim while the writer is stopped; any row that appears later was committed after
   * the claim.
   */
  static final class StaleWriteChecker {
    private final LegacyDatabase d;
    private final String writer;
    private final Set<Integer> atTakeover;

    StaleWriteChecker(LegacyDatabase d, String writer) throws Exception {
      this.d = d;
      this.writer = writer;
      this.atTakeover = d.committed(writer);
    }

    Set<Integer> committedAfterTakeover() throws Exception {
      Set<Integer> now = new TreeSet<>(d.committed(writer));
      now.removeAll(atTakeover);
      return now;
    }
  }
}
