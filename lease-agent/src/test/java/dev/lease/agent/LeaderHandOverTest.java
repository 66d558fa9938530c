package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 23: leader mode's graceful shutdown with {@code transfer-to} hands the lease to the named
 * successor (the shutdown hook's order: the election stops, then the transfer, then the manager's
 * close): a third replica polling meanwhile never gets it, and the successor adopts it at the next
 * term. Negative control: the plain shutdown (release) lets the third replica in.
 */
class LeaderHandOverTest {

  private static final LeaseTimings TIMINGS =
      LeaseTimings.builder()
          .leaseDuration(Duration.ofMillis(6000))
          .renewInterval(Duration.ofMillis(200))
          .attemptTimeout(Duration.ofMillis(2000))
          .localDeadline(Duration.ofMillis(4000))
          .gracePeriod(Duration.ofMillis(400))
          .build();

  @AfterEach
  void clearProcessWideLease() {
    LeaseInternals.bindProcessWide(null);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.agent.LeaderElectionTest#databases")
  void aShutdownWithTransferToHandsTheLeaseToTheSuccessor(TestDatabase db) throws Exception {
    Lease[] result = shutDown(db, true);
    assertFalse(result[0] != null, db + ": the third replica never got the lease");
    assertTrue(result[1] != null, db + ": the successor adopted it");
  }

  /** Negative control: a shutdown that releases lets whichever replica polls first in. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.agent.LeaderElectionTest#databases")
  void negativeControlAShutdownThatReleasesLetsTheThirdReplicaIn(TestDatabase db) throws Exception {
    Lease[] result = shutDown(db, false);
    assertTrue(result[0] != null, db + ": the third replica got it: what transfer-to prevents");
  }

  @Test
  void transferToIsALeaderModeKey() {
    AgentConfig c =
        AgentConfig.parse("mode=leader,lease=x,url=jdbc:sqlite:x,transfer-to=app-2", k -> null);
    assertEquals("app-2", c.transferTo);
    assertThrows(
        BadConfigurationException.class,
        () ->
            AgentConfig.parse(
                "mode=methods,methods=a.B#c=d,url=jdbc:sqlite:x,transfer-to=app-2", k -> null));
  }

  /** {third replica's claim after the shutdown, successor's claim after it}. */
  private static Lease[] shutDown(TestDatabase db, boolean transfer) throws Exception {
    String url = db.isSqlite() ? db.url() + "?journal_mode=WAL&busy_timeout=10000" : db.url();
    String table = TestDatabase.uniqueTable("agent_handover");
    LeaseDatabase ldb =
        new LeaseDatabase(AgentConfig.parse("mode=leader,lease=x,url=" + url, k -> null));
    LeaseManager leader = manager(ldb, table, "app-1");
    LeaseManager successor = manager(new UrlDataSource(url), table, "app-2");
    LeaseManager third = manager(new UrlDataSource(url), table, "app-3");
    LeaderElection election = new LeaderElection(leader, "leader", AgentConfig.OnLoss.HALT);
    try {
      election.start();
      Lease led = LeaseInternals.processWide().orElseThrow();
      assertTrue(led.isHeld(), "the first claim leads");
      // the shutdown hook's order
      election.stop();
      if (transfer) {
        assertTrue(election.transferTo("app-2"), "handed over");
      }
      leader.close();
      Lease thirds = third.tryClaim("leader").orElse(null);
      Lease successors = successor.tryClaim("leader").orElse(null);
      if (successors != null) {
        assertTrue(successors.term() > led.term());
      }
      return new Lease[] {thirds, successors};
    } finally {
      election.stop();
      leader.close();
      successor.close();
      third.close();
      ldb.close();
      TestDatabase.dropQuietly(new UrlDataSource(url), table);
    }
  }

  private static LeaseManager manager(javax.sql.DataSource ds, String table, String instance) {
    return LeaseManager.builder(ds)
        .table(table)
        .instance(instance)
        .timings(TIMINGS)
        .failurePolicy(FailurePolicy.logOnly())
        .createTableIfMissing()
        .build();
  }
}
