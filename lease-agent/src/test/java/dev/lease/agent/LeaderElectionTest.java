package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Leader mode's loss goes through lease-core's failure policy, on a real lease table: with {@code
 * on-loss=halt} a lost leader's policy runs once, for the election thread, when the grace period
 * has passed; a shutdown ({@link LeaderElection#stop()}, then the manager's close) during the grace
 * period ends the election's work first, and the policy never runs. The policy here records its
 * calls instead of halting (the child-JVM tests see the real halt: PoolLeaderModeIT). The first
 * case is the control of the second: the same detector sees the policy when it runs.
 */
class LeaderElectionTest {

  private static final String LEASE = "elected";

  /** A short grace, so that waiting past it costs little. */
  private static final LeaseTimings TIMINGS =
      LeaseTimings.builder()
          .leaseDuration(Duration.ofMillis(3000))
          .renewInterval(Duration.ofMillis(100))
          .attemptTimeout(Duration.ofMillis(1000))
          .localDeadline(Duration.ofMillis(2000))
          .gracePeriod(Duration.ofMillis(400))
          .build();

  /** A server and a file: the loss path does not depend on the dialect beyond that. */
  static Stream<TestDatabase> databases() {
    return Stream.of(TestDatabase.POSTGRESQL, TestDatabase.SQLITE);
  }

  @AfterEach
  void clearProcessWideLease() {
    LeaseInternals.bindProcessWide(null);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  void aLostLeaderRunsThePolicyOnceAndAShutdownWithinTheGraceNever(TestDatabase db)
      throws Exception {
    String url = db.isSqlite() ? db.url() + "?journal_mode=WAL&busy_timeout=10000" : db.url();
    String table = TestDatabase.uniqueTable("agent_election_leases");
    try {
      // no shutdown: the policy runs once, for the election thread, after the grace period
      List<String> calls = lose(url, table, false);
      assertEquals(1, calls.size(), "policy calls " + calls);
      assertTrue(calls.get(0).endsWith(" lease-agent-leader"), calls.toString());

      // a shutdown within the grace period: never
      assertEquals(List.of(), lose(url, table, true), "the policy ran for a shutdown");
    } finally {
      TestDatabase.dropQuietly(new UrlDataSource(url), table);
    }
  }

  /**
   * Elects a leader (on-loss=halt), takes its lease over in the database, and either shuts down at
   * once or not; returns the policy's calls once twice the grace period has passed after the loss.
   */
  private static List<String> lose(String url, String table, boolean shutDown) throws Exception {
    String name = LEASE + (shutDown ? "-shut-down" : "-lost");
    List<String> calls = new CopyOnWriteArrayList<>();
    FailurePolicy recording = (lease, worker) -> calls.add(lease + " " + worker.getName());
    LeaseDatabase ldb =
        new LeaseDatabase(AgentConfig.parse("mode=leader,lease=x,url=" + url, k -> null));
    LeaseManager m =
        LeaseManager.builder(ldb)
            .table(table)
            .timings(TIMINGS)
            .failurePolicy(recording)
            .createTableIfMissing()
            .build();
    LeaderElection election = new LeaderElection(m, name, AgentConfig.OnLoss.HALT);
    try {
      election.start();
      Lease led = LeaseInternals.processWide().orElseThrow();
      assertTrue(led.isHeld(), "the first claim leads");
      try (Connection c = new UrlDataSource(url).getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "UPDATE "
                      + table
                      + " SET holder = 'z', instance = 'Z', term = term + 1, expires_at_ms ="
                      + " expires_at_ms + 3600000 WHERE name = ?")) {
        ps.setString(1, name);
        assertEquals(1, ps.executeUpdate());
      }
      await("the loss", () -> led.isLost());
      if (shutDown) {
        election.stop();
        m.close();
      }
      // past the grace period, with margin: when the policy would have run
      Thread.sleep(2 * TIMINGS.gracePeriod().toMillis());
      assertFalse(led.isHeld());
      return List.copyOf(calls);
    } finally {
      election.stop();
      m.close();
      ldb.close();
    }
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "no " + what + " within 20 s");
      Thread.sleep(10); // polling with a deadline
    }
  }
}
