package dev.lease.conformance.failover;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Leases across real failovers of the CI's replicated pairs ({@code .ci/replicas}, set up by {@code
 * .ci/run}): PostgreSQL primary + streaming standby (synchronous and asynchronous), MariaDB primary
 * + GTID replica (semi-synchronous and asynchronous). Every round kills the primary at a generated
 * moment after a generated replication lag and promotes the replica; the holders are threads of
 * this JVM, each with its own lease manager and HikariCP pools on the drivers' multi-host URLs.
 *
 * <p>Skipped (not passed) without {@code LEASE_FAILOVER_SCRIPT} (environment or system property
 * {@code lease.failover.script}), the path of {@code .ci/replicas}. Rounds per mode: system
 * property {@code lease.failover.rounds} (default 3, the CI's time budget).
 */
@Execution(ExecutionMode.CONCURRENT)
class FailoverPropertyTest {

  /** The lock of the replicated PostgreSQL pair (5442/5443): one user at a time. */
  static final String POSTGRESQL_PAIR = "replicated postgresql pair";

  /** The lock of the replicated MariaDB pair (3307/3308): one user at a time. */
  static final String MARIADB_PAIR = "replicated mariadb pair";

  /** One replicated pair in one replication mode. */
  record Mode(String database, String mode, boolean synchronous) {
    @Override
    public String toString() {
      return database + " " + mode;
    }

    boolean postgres() {
      return database.equals("postgresql");
    }

    String url() {
      return postgres()
          ? "jdbc:postgresql://127.0.0.1:5442,127.0.0.1:5443/test?targetServerType=primary"
              + "&connectTimeout=2&loginTimeout=3"
          // sequential: the hosts in order; .ci/replicas makes node a (3307) the primary before
          // each round, and after the failover 3307 is dead, so connections reach 3308
          // user lease: without SUPER, so a connection that lands on the read-only replica fails
          // instead of writing there (root's writes there forked the history, measured)
          : "jdbc:mariadb:sequential://127.0.0.1:3307,127.0.0.1:3308/test?connectTimeout=5000";
    }

    FailoverHook hook(String script) {
      String prefix = postgres() ? "pg" : "my";
      FailoverHook commands =
          FailoverHook.commands(
              script + " " + prefix + "-prepare " + mode,
              script + " " + prefix + "-stall",
              script + " " + prefix + "-failover");
      if (postgres()) {
        return commands; // pgjdbc finds the primary itself (targetServerType=primary)
      }
      // MariaDB Connector/J's sequential mode tries hosts in order and does not look for the
      // writable one: each round lists the pair's current primary first.
      return new FailoverHook() {
        @Override
        public void prepare() throws java.io.IOException {
          commands.prepare();
        }

        @Override
        public void stall() throws java.io.IOException {
          commands.stall();
        }

        @Override
        public void failOver() throws java.io.IOException {
          commands.failOver();
        }

        @Override
        public Target target(Target configured) throws java.io.IOException {
          String primary = status(script).getOrDefault("primary", "3307");
          String replica = primary.equals("3307") ? "3308" : "3307";
          return new Target(
              "jdbc:mariadb:sequential://127.0.0.1:"
                  + primary
                  + ",127.0.0.1:"
                  + replica
                  + "/test?connectTimeout=5000",
              configured.user(),
              configured.password());
        }

        @Override
        public String describe() {
          return commands.describe();
        }
      };
    }
  }

  /** The four pairs × modes; system property {@code lease.failover.only} picks by name part. */
  static Stream<Mode> modes() {
    String only = System.getProperty("lease.failover.only", "");
    return Stream.of(
            new Mode("postgresql", "sync", true),
            new Mode("postgresql", "async", false),
            new Mode("mariadb", "semisync", true),
            new Mode("mariadb", "async", false))
        .filter(m -> m.toString().contains(only));
  }

  static Stream<Mode> postgresqlModes() {
    return modes().filter(Mode::postgres);
  }

  static Stream<Mode> mariadbModes() {
    return modes().filter(m -> !m.postgres());
  }

  static Stream<Mode> postgresqlAsync() {
    return postgresqlModes().filter(m -> !m.synchronous());
  }

  static Stream<Mode> mariadbAsync() {
    return mariadbModes().filter(m -> !m.synchronous());
  }

  /** {@code .ci/replicas my-status} as key=value pairs. */
  static java.util.Map<String, String> status(String script) throws java.io.IOException {
    Process p = new ProcessBuilder(script, "my-status").redirectErrorStream(true).start();
    String out =
        new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    java.util.Map<String, String> m = new java.util.HashMap<>();
    for (String line : out.split("\n")) {
      int eq = line.indexOf('=');
      if (eq > 0) {
        m.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
      }
    }
    return m;
  }

  static String script() {
    String s = System.getProperty("lease.failover.script", System.getenv("LEASE_FAILOVER_SCRIPT"));
    Assumptions.assumeTrue(
        s != null && !s.isBlank() && Files.isExecutable(Path.of(s)),
        "no replicated pairs: set LEASE_FAILOVER_SCRIPT to .ci/replicas after `.ci/replicas setup`"
            + " (.ci/run does both)");
    return s;
  }

  static int rounds() {
    return Integer.getInteger("lease.failover.rounds", 3);
  }

  private static Target target(Mode m) {
    return m.postgres()
        ? new Target(m.url(), "postgres", "")
        : new Target(m.url(), "lease", "lease");
  }

  // The two pairs are independent (their own servers, ports and tables), so the PostgreSQL lane and
  // the MariaDB lane run side by side (junit-platform.properties; each lane holds its pair's lock,
  // which also makes its rounds run one after another), and beside the module's other tests: a
  // failover is mostly waiting (a crash, a promotion, a rebuilt replica), not CPU.

  @ParameterizedTest(name = "{0}")
  @MethodSource("postgresqlModes")
  @ResourceLock(POSTGRESQL_PAIR)
  void leasesHoldAcrossFailoversOfThePostgresqlPair(Mode m) {
    leasesHoldAcrossFailovers(m);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("mariadbModes")
  @ResourceLock(MARIADB_PAIR)
  void leasesHoldAcrossFailoversOfTheMariadbPair(Mode m) {
    leasesHoldAcrossFailovers(m);
  }

  private static void leasesHoldAcrossFailovers(Mode m) {
    String script = script();
    int rounds = rounds();
    PropertyResult r =
        new FailoverProperty(
                m.hook(script), rounds, rounds, m.synchronous(), FailoverProperty.Break.NONE)
            .check(target(m), Size.QUICK, 19L, ConformanceProperty.Progress.NONE);
    System.out.println("failover " + m + ": " + r);
    assertEquals(PropertyResult.Verdict.HOLDS, r.verdict(), r.failure() + " " + r.counts());
    assertEquals(rounds, r.observed("failovers run"), r.counts().toString());
  }

  /**
   * Negative control: a holder that trusts its own clock (writes unfenced for the lease's duration
   * after its claim) instead of the verify. An asynchronous failover during its claim loses the
   * claim; the holder goes on writing on the promoted server, where a successor was granted the
   * same term: caught. (On a synchronous pair the claim is not acknowledged before the standby has
   * it, so this holder never believes in a vanished claim: the control applies to async only.)
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("postgresqlAsync")
  @ResourceLock(POSTGRESQL_PAIR)
  void aHolderThatTrustsItsClockIsCaughtAfterAnAsyncFailoverOfThePostgresqlPair(Mode m) {
    aHolderThatTrustsItsClockIsCaught(m);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("mariadbAsync")
  @ResourceLock(MARIADB_PAIR)
  void aHolderThatTrustsItsClockIsCaughtAfterAnAsyncFailoverOfTheMariadbPair(Mode m) {
    aHolderThatTrustsItsClockIsCaught(m);
  }

  private static void aHolderThatTrustsItsClockIsCaught(Mode m) {
    String script = script();
    PropertyResult r =
        new FailoverProperty(m.hook(script), 3, 3, false, FailoverProperty.Break.NONE)
            .holderTrustsItsClock()
            .check(target(m), Size.QUICK, 23L, ConformanceProperty.Progress.NONE);
    System.out.println("failover control " + m + ": " + r);
    assertEquals(PropertyResult.Verdict.FAILS, r.verdict(), r.counts().toString());
    assertTrue(r.observed("hand-overs lost with the failover") >= 1, r.counts().toString());
  }
}
