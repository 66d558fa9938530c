package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Bad configuration stops the JVM before the application's main runs, with a message that says what
 * is wrong, and never shows a password. Each case launches the legacy application with the agent.
 */
class MisconfigurationIT {

  private static final String PG = TestDatabase.POSTGRESQL.url();

  /** Runs the legacy application with {@code agentArgs}; returns it after it ended. */
  private static AppProcess run(String agentArgs, Map<String, String> env) throws Exception {
    AppProcess app =
        AppProcess.start(
            "misconfigured", AppProcess.JAVA_17, agentArgs, env, "first-query", PG, "plain");
    app.awaitExit();
    return app;
  }

  private static void assertStopped(AppProcess app, int status, String message) throws Exception {
    assertEquals(status, app.awaitExit(), app.describe());
    assertTrue(app.stderr().contains("lease-agent: " + message), app.describe());
    assertTrue(app.stderr().contains("stopping the JVM"), app.describe());
    assertFalse(app.lines().contains("STARTED"), "the application ran: " + app.describe());
  }

  @Test
  void missingLeaseUrlStopsTheJvm() throws Exception {
    assertStopped(
        run("mode=leader,lease=l", Map.of()),
        78,
        "configuration error: missing url: set url=jdbc:... in the agent arguments or the config"
            + " file, or the environment variable LEASE_AGENT_URL");
  }

  @Test
  void unknownModeStopsTheJvm() throws Exception {
    assertStopped(
        run("mode=folower,lease=l,url=" + PG, Map.of()),
        78,
        "configuration error: unknown mode 'folower'; mode must be leader or methods");
  }

  @Test
  void badMethodSpecStopsTheJvm() throws Exception {
    assertStopped(
        run("mode=methods,url=" + PG + ",methods=legacy.Jobs.nightly=billing", Map.of()),
        78,
        "configuration error: bad method spec 'legacy.Jobs.nightly=billing': expected entries"
            + " like com.acme.Jobs#nightly=billing");
  }

  @Test
  void unreachableDatabaseStopsTheJvmWithoutShowingThePassword() throws Exception {
    // port 1 on the loopback: nothing listens, the connection is refused at once
    AppProcess app =
        run(
            "mode=leader,lease=l,user=postgres,url=jdbc:postgresql://127.0.0.1:1/test",
            Map.of("LEASE_AGENT_PASSWORD", "s3cret-pw"));
    assertStopped(app, 69, "the lease database cannot be used: cannot reach the lease database");
    assertTrue(app.stderr().contains("127.0.0.1:1"), app.describe());
    assertFalse(app.stderr().contains("s3cret-pw"), app.describe());
  }

  @Test
  void passwordInTheUrlIsNeverShown() throws Exception {
    AppProcess app =
        run(
            "mode=leader,lease=l,url=jdbc:postgresql://127.0.0.1:1/test?user=postgres"
                + "&password=url-s3cret",
            Map.of());
    assertStopped(app, 69, "the lease database cannot be used");
    assertFalse(app.stderr().contains("url-s3cret"), app.describe());
    assertTrue(app.stderr().contains("password=****"), app.describe());
  }

  @Test
  void missingLeaseTableWithoutCreateTableStopsTheJvm() throws Exception {
    String table = TestDatabase.uniqueTable("agent_missing");
    assertStopped(
        run("mode=leader,lease=l,table=" + table + ",url=" + PG, Map.of()),
        69,
        "the lease database cannot be used: lease table " + table + " does not exist");
  }

  @Test
  void configuredMethodThatTheClassDoesNotDeclareStopsTheJvmWhenTheClassLoads() throws Exception {
    String table = TestDatabase.uniqueTable("agent_leases");
    try {
      AppProcess app =
          AppProcess.start(
              "misconfigured",
              AppProcess.JAVA_17,
              "mode=methods,create-table=true,table="
                  + table
                  + ",url="
                  + PG
                  + ",methods=legacy.Jobs#nigthly=billing",
              Map.of(),
              "jobs",
              PG,
              "unused",
              "A");
      app.send("trigger 1");
      assertEquals(78, app.awaitExit(), app.describe());
      assertTrue(
          app.stderr()
              .contains(
                  "lease-agent: bad method spec 'legacy.Jobs#nigthly=billing':"
                      + " class legacy.Jobs declares no concrete method nigthly"),
          app.describe());
      assertFalse(app.lines().stream().anyMatch(l -> l.startsWith("JOB-")), app.describe());
    } finally {
      TestDatabase.dropQuietly(TestDatabase.POSTGRESQL.unpooled(), table);
    }
  }
}
