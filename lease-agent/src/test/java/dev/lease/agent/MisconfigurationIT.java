package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Bad configuration stops the JVM, with a message that says what is wrong, and never shows a
 * password: before the application's main runs for what the agent checks at start, when the class
 * loads for what only the class shows (a configured method it lacks, a JDBC class that cannot be
 * instrumented, a pool-internals entry that names a hand-out), at the first connection for a
 * pool-internals entry that hides one. Each case launches the legacy application with the agent.
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
    AppProcess app = run("mode=leader,lease=l,table=" + table + ",url=" + PG, Map.of());
    assertTrue(app.stderr().contains("start the agent with create-table=true"), app.describe());
    assertFalse(app.stderr().contains("LeaseManager"), app.describe());
  }

  /** Methods-mode arguments (legacy.Jobs#nightly under lease billing), a lease table of its own. */
  private static String jobs(String table, String more) {
    return "mode=methods,methods=legacy.Jobs#nightly=billing,create-table=true,table="
        + table
        + ",url="
        + PG
        + more;
  }

  /** Leader-mode arguments with a lease table of the test's own. */
  private static String leader(String table, String more) {
    return "mode=leader,lease=l,create-table=true,table=" + table + ",url=" + PG + more;
  }

  /** Runs {@code args} of the legacy application with the agent; returns it after it ended. */
  private static AppProcess runApp(String agentArgs, List<String> jvm, String... args)
      throws Exception {
    AppProcess app =
        AppProcess.start(
            "app",
            AppProcess.JAVA_17,
            agentArgs,
            Map.of(),
            jvm,
            false,
            legacy.LegacyApp.class.getName(),
            args);
    app.awaitExit();
    return app;
  }

  private static void withTable(ThrowingConsumer<String> test) throws Exception {
    String table = TestDatabase.uniqueTable("agent_leases");
    try {
      test.accept(table);
    } finally {
      TestDatabase.dropQuietly(TestDatabase.POSTGRESQL.unpooled(), table);
    }
  }

  @FunctionalInterface
  private interface ThrowingConsumer<T> {
    void accept(T t) throws Exception;
  }

  @Test
  void jdbcClassInALoaderThatCannotSeeTheAgentStopsTheJvm() throws Exception {
    withTable(
        table -> {
          AppProcess app = runApp(leader(table, ""), List.of(), "isolated");
          assertEquals(78, app.awaitExit(), app.describe());
          assertTrue(
              app.stderr()
                  .contains(
                      "lease-agent: JDBC class legacy.RoutingDataSource (class loader"
                          + " java.net.URLClassLoader@"),
              app.describe());
          assertTrue(app.stderr().contains("accept the risk with on-unfenced=log"), app.describe());
          assertFalse(app.lines().stream().anyMatch(l -> l.startsWith("ISOLATED-LOADED")));
        });
  }

  @Test
  void onUnfencedLogAcceptsTheRiskAndSaysSo() throws Exception {
    withTable(
        table -> {
          AppProcess app = runApp(leader(table, ",on-unfenced=log"), List.of(), "isolated");
          assertEquals(0, app.awaitExit(), app.describe());
          assertTrue(app.lines().contains("ISOLATED-LOADED legacy.RoutingDataSource"));
          assertTrue(app.stderr().contains("it runs UNFENCED (on-unfenced=log)"), app.describe());
        });
  }

  /**
   * A methods= class loaded again by a loader that cannot see the agent: its method would run
   * without the lease (on every replica at once), so the JVM stops, naming it.
   */
  @Test
  void methodsClassInALoaderThatCannotSeeTheAgentStopsTheJvm() throws Exception {
    withTable(
        table -> {
          AppProcess app = runApp(jobs(table, ""), List.of(), "isolated-jobs");
          assertEquals(78, app.awaitExit(), app.describe());
          assertTrue(
              app.stderr()
                  .contains(
                      "lease-agent: class legacy.Jobs of methods=legacy.Jobs#nightly (class loader"
                          + " java.net.URLClassLoader@"),
              app.describe());
          assertTrue(app.stderr().contains("would run without its lease billing"), app.describe());
          assertFalse(app.lines().stream().anyMatch(l -> l.startsWith("ISOLATED-LOADED")));
        });
  }

  /** Beside it: with on-unfenced=log the class loads, and the log says the method is unleased. */
  @Test
  void methodsClassInALoaderThatCannotSeeTheAgentIsLoggedWithOnUnfencedLog() throws Exception {
    withTable(
        table -> {
          AppProcess app = runApp(jobs(table, ",on-unfenced=log"), List.of(), "isolated-jobs");
          assertEquals(0, app.awaitExit(), app.describe());
          assertTrue(app.lines().contains("ISOLATED-LOADED legacy.Jobs"), app.describe());
          assertTrue(app.stderr().contains("would run without its lease billing"), app.describe());
        });
  }

  /** Weaving broken on purpose for one class: the JVM stops, naming it. */
  @Test
  void jdbcClassWhoseInstrumentationFailsStopsTheJvm() throws Exception {
    withTable(
        table -> {
          AppProcess app =
              runApp(
                  leader(table, ""),
                  List.of("-Dlease.agent.testing.failInstrumentationOf=legacy.RoutingDataSource"),
                  "connections",
                  PG,
                  "routing-hikari",
                  "1");
          assertEquals(78, app.awaitExit(), app.describe());
          assertTrue(
              app.stderr()
                  .contains(
                      "lease-agent: could not instrument JDBC class legacy.RoutingDataSource"
                          + " (class loader "),
              app.describe());
          assertFalse(app.lines().stream().anyMatch(l -> l.startsWith("CONNECTION")));
        });
  }

  /** The issue's case: a pool-internals entry naming the pool's hand-out. */
  @Test
  void poolInternalsNamingTheApplicationsGetConnectionStopsTheJvm() throws Exception {
    withTable(
        table -> {
          String entry = "org.apache.tomcat.jdbc.pool.DataSourceProxy#getConnection";
          AppProcess app =
              runApp(
                  leader(table, ",pool-internals=" + entry),
                  List.of(),
                  "connections",
                  PG,
                  "tomcat",
                  "1");
          assertEquals(78, app.awaitExit(), app.describe());
          assertTrue(
              app.stderr()
                  .contains(
                      "lease-agent: bad pool-internals entry '"
                          + entry
                          + "': "
                          + entry
                          + " hands connections to the application"),
              app.describe());
          assertFalse(app.lines().stream().anyMatch(l -> l.startsWith("CONNECTION")));
        });
  }

  /**
   * A pool-internals entry around the application's own call of the pool: found at the first
   * connection the pool hands out inside it, which no driver made.
   */
  @Test
  void poolInternalsEnclosingAHandOutStopsTheJvmAtTheFirstOne() throws Exception {
    withTable(
        table -> {
          AppProcess app =
              runApp(
                  leader(table, ",pool-internals=legacy.LegacyApp#connections"),
                  List.of(),
                  "connections",
                  PG,
                  "hikari",
                  "2");
          assertEquals(78, app.awaitExit(), app.describe());
          assertTrue(
              app.stderr()
                  .contains(
                      "lease-agent: pool-internals entry legacy.LegacyApp#connections encloses"
                          + " com.zaxxer.hikari.HikariDataSource.getConnection, which handed out a"
                          + " com.zaxxer.hikari.pool.HikariProxyConnection that no JDBC driver"
                          + " made"),
              app.describe());
          assertFalse(app.lines().stream().anyMatch(l -> l.startsWith("CONNECTION")));
        });
  }

  /**
   * A pool-internals entry naming the application's own helper that gets a connection: from
   * DriverManager (a driver's connection) or from a cold DBCP2 pool (whose borrow opens its
   * physical connections on the caller's thread), neither of which the hand-out check sees. The
   * connection the entry returned runs its first statement outside every entry and not through a
   * fenced connection: the JVM stops there, before the statement.
   */
  @Test
  void poolInternalsReturningTheApplicationsDriverManagerConnectionStopsTheJvm() throws Exception {
    withTable(
        table -> {
          AppProcess app = openInsideEntry(table, "plain", List.of());
          assertTrue(
              stoppedForUnfencedUse(app, "org.postgresql.jdbc.PgConnection"), app.describe());
        });
  }

  @Test
  void poolInternalsReturningAColdDbcp2PoolsConnectionStopsTheJvm() throws Exception {
    withTable(
        table -> {
          AppProcess app = openInsideEntry(table, "dbcp2", List.of());
          assertTrue(
              stoppedForUnfencedUse(
                  app, "org.apache.commons.dbcp2.PoolingDataSource$PoolGuardConnectionWrapper"),
              app.describe());
        });
  }

  /**
   * Negative control: without the marks of connections that configured scopes return, the same
   * application runs with the driver's own connection, unfenced; the same check sees it.
   */
  @Test
  void withoutScopeMarksTheDriverManagerConnectionRunsUnfenced() throws Exception {
    withTable(
        table -> {
          AppProcess app =
              openInsideEntry(table, "plain", List.of("-Dlease.agent.testing.disable=scope-marks"));
          assertTrue(
              app.lines().contains("CONNECTION 1 org.postgresql.jdbc.PgConnection"),
              app.describe());
          assertFalse(
              stoppedForUnfencedUse(app, "org.postgresql.jdbc.PgConnection"), app.describe());
        });
  }

  /** The legacy application getting 2 connections through its helper named in pool-internals. */
  private static AppProcess openInsideEntry(String table, String pool, List<String> jvm)
      throws Exception {
    return runApp(
        leader(table, ",pool-internals=legacy.LegacyApp#open"), jvm, "connections", PG, pool, "2");
  }

  /** Stopped with 78 at the first statement, before the application printed any connection. */
  private static boolean stoppedForUnfencedUse(AppProcess app, String handedOut) throws Exception {
    return app.awaitExit() == 78
        && app.stderr()
            .contains(
                "lease-agent: pool-internals entry legacy.LegacyApp#open returned a "
                    + handedOut
                    + " that then ran a statement on thread main outside every pool-internals"
                    + " method and not through a fenced connection")
        && app.lines().stream().noneMatch(l -> l.startsWith("CONNECTION"));
  }

  /**
   * The negative-control switches weaken the fence on purpose: outside the project's test JVMs (no
   * {@code -Dlease.agent.testJvm=true}) a leftover one stops the JVM before the application runs,
   * naming it.
   */
  @Test
  void testingSwitchesOutsideATestJvmStopTheJvm() throws Exception {
    withTable(
        table -> {
          AppProcess app =
              runApp(
                  leader(table, ""),
                  List.of(
                      "-Dlease.agent.testing.disable=vendor-faces", "-Dlease.agent.testJvm=false"),
                  "connections",
                  PG,
                  "plain",
                  "1");
          assertStopped(
              app,
              78,
              "configuration error: test-only switches are set (lease.agent.testing.disable="
                  + "vendor-faces, lease.agent.testing.rules=dev.lease.agent.WeakenedRules):"
                  + " they weaken the fence on"
                  + " purpose and are honoured only in this project's test JVMs");
        });
  }

  /**
   * Negative control: in a test JVM (the marker the tests set) the same switch is honoured, and an
   * ERROR at start says what is weakened; the same check does not see a stop.
   */
  @Test
  void testingSwitchesInATestJvmAreHonouredAndLogged() throws Exception {
    withTable(
        table -> {
          AppProcess app =
              runApp(
                  leader(table, ""),
                  List.of("-Dlease.agent.testing.disable=vendor-faces"),
                  "connections",
                  PG,
                  "plain",
                  "1");
          assertEquals(0, app.awaitExit(), app.describe());
          assertTrue(
              app.stderr()
                  .contains(
                      "ERROR LeaseAgent - TEST JVM: the fence is weakened on purpose by"
                          + " lease.agent.testing.disable=vendor-faces"),
              app.describe());
        });
  }

  /**
   * No false alarm: a pool-internals entry set that names where DBCP2 opens and tests its
   * connections (its built-in rule switched off) runs, its connections fenced.
   */
  @Test
  void poolInternalsNamingThePoolsFactoryAndTestRun() throws Exception {
    withTable(
        table -> {
          String f = "org.apache.commons.dbcp2.PoolableConnectionFactory";
          AppProcess app =
              runApp(
                  leader(table, ",pool-internals=" + f + "#makeObject;" + f + "#validateObject"),
                  List.of("-Dlease.agent.testing.disable=builtin-pools"),
                  "connections",
                  PG,
                  "dbcp2",
                  "3");
          assertEquals(0, app.awaitExit(), app.describe());
          assertEquals(
              3,
              app.lines().stream()
                  // fenced: lease-jdbc's connection behind the vendor face (a proxy), never
                  // DBCP2's or the driver's own
                  .filter(
                      l ->
                          l.startsWith("CONNECTION ")
                              && !l.contains("dbcp2")
                              && !l.contains("PgConnection"))
                  .count(),
              app.describe());
        });
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
