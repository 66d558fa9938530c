package dev.lease.conformance.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The runner's failover property through its hook: skipped without {@code --failover-command}
 * (asking for it then is bad input, never a pass), and run against the CI's replicated PostgreSQL
 * and MariaDB pairs with {@code .ci/replicas} as the user's failover tooling (skipped without the
 * pairs): the two examples of docs/high-availability.md, as a user would type them.
 */
class FailoverCommandTest {

  private static int run(ByteArrayOutputStream out, String... args) {
    PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
    return Main.run(args, Map.of(), o, o);
  }

  @Test
  void withoutACommandTheFailoverPropertyIsNotRunAndAskingForItIsBadInput() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertEquals(2, run(out, "--only", "failover"), out.toString(StandardCharsets.UTF_8));
    assertTrue(
        out.toString(StandardCharsets.UTF_8).contains("needs --failover-command"),
        out.toString(StandardCharsets.UTF_8));
    assertTrue(Options.propertyIds().contains("failover"));
  }

  @Test
  @ResourceLock("replicated postgresql pair") // FailoverPropertyTest's lanes run beside this class
  void theHookFailsTheCiPairOverAndThePropertyHolds() {
    String script = script();
    String ports = System.getenv("FO_PG_PORTS"); // .ci/replicas reads the same
    String[] pg = (ports == null || ports.isBlank() ? "5442 5443" : ports).trim().split("\\s+");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int status =
        run(
            out,
            "--url",
            "jdbc:postgresql://127.0.0.1:"
                + pg[0]
                + ",127.0.0.1:"
                + pg[1]
                + "/test?targetServerType=primary",
            "--user",
            "postgres",
            "--only",
            "failover",
            "--seed",
            "5",
            "--failover-command",
            script + " pg-failover",
            "--failover-prepare-command",
            script + " pg-prepare async",
            "--failover-stall-command",
            script + " pg-stall");
    String text = out.toString(StandardCharsets.UTF_8);
    System.out.println(text);
    assertEquals(0, status, text);
    assertTrue(text.matches("(?s).*failover\\s+postgresql\\s+holds.*"), text);
  }

  /**
   * MariaDB as a user meets it: a plain sequential URL that lists node a first, with {@code
   * deniedListTimeout=0} so that Connector/J tries node a again once it is back; the prepare
   * command makes node a the primary again by a switchover, and the user has no SUPER (a connection
   * that reaches the read-only replica fails instead of writing there). The mode is declared.
   */
  @Test
  @ResourceLock("replicated mariadb pair") // FailoverPropertyTest's lanes run beside this class
  void theHookFailsTheCiMariadbPairOverAndThePropertyHolds() {
    String script = script();
    String ports = System.getenv("FO_MY_PORTS"); // .ci/replicas reads the same
    String[] my = (ports == null || ports.isBlank() ? "3307 3308" : ports).trim().split("\\s+");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int status =
        run(
            out,
            "--url",
            "jdbc:mariadb:sequential://127.0.0.1:"
                + my[0]
                + ",127.0.0.1:"
                + my[1]
                + "/test?deniedListTimeout=0&connectTimeout=5000",
            "--user",
            "lease",
            "--password",
            "lease",
            "--only",
            "failover",
            "--seed",
            "7",
            "--failover-replication",
            "async",
            "--failover-command",
            script + " my-failover",
            "--failover-prepare-command",
            script + " my-prepare async first",
            "--failover-stall-command",
            script + " my-stall");
    String text = out.toString(StandardCharsets.UTF_8);
    System.out.println(text);
    assertEquals(0, status, text);
    assertTrue(text.matches("(?s).*failover\\s+mariadb\\s+holds.*"), text);
    assertTrue(text.contains("asynchronous replication (declared)"), text);
  }

  private static String script() {
    String script =
        System.getProperty("lease.failover.script", System.getenv("LEASE_FAILOVER_SCRIPT"));
    Assumptions.assumeTrue(
        script != null && Files.isExecutable(Path.of(script)),
        "no replicated pairs: set LEASE_FAILOVER_SCRIPT to .ci/replicas (.ci/run does)");
    return script;
  }
}
