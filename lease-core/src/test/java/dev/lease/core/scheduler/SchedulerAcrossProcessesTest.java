package dev.lease.core.scheduler;

import static dev.lease.core.scheduler.SchedulerReplicas.assertEachInstantOnce;
import static dev.lease.core.scheduler.SchedulerReplicas.awaitUntil;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.LeaseManager;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * Three scheduler replicas in three JVMs ({@link SchedulerReplicaMain}) run one job on a 400 ms
 * fixed rate: every instant runs once across the processes, or is reported skipped once. The
 * negative control runs the same processes with a scheduler that ignores the last instant on
 * record.
 */
class SchedulerAcrossProcessesTest {

  private static final long PERIOD_MS = 400;

  @OnEveryDatabase
  void everyInstantRunsOnceAcrossThreeProcesses(TestDatabase db) throws Exception {
    Result r = runProcesses(db, 10, false, PERIOD_MS);
    // at least two ran: cold JVMs on a loaded machine overrun some periods, and those instants are
    // skipped (and checked as such)
    assertEachInstantOnce(r.runs, r.skipped, r.schedule, 2, 15_000);
  }

  /** Negative control: processes that ignore the last instant run instants twice; caught. */
  @OnEveryDatabase
  void checkerCatchesProcessesThatIgnoreTheLastInstant(TestDatabase db) throws Exception {
    // a longer period leaves time in each period for the broken replicas to run an instant again,
    // even when a loaded machine makes rounds slow; the wait ends at the first duplicate
    Result r = runProcesses(db, 30, true, 2_000);
    AssertionError caught =
        assertThrows(
            AssertionError.class,
            () -> assertEachInstantOnce(r.runs, r.skipped, r.schedule, 2, 15_000));
    assertTrue(
        java.util.regex.Pattern.compile("ran ([2-9]|[1-9][0-9]+) times")
            .matcher(caught.getMessage())
            .find(),
        caught.getMessage());
  }

  private record Result(
      Map<Long, List<SchedulerReplicas.Run>> runs,
      Map<Long, List<String>> skipped,
      Schedule schedule) {}

  private static Result runProcesses(TestDatabase db, int instants, boolean broken, long periodMs)
      throws Exception {
    String url;
    DataSource ds;
    if (db.isSqlite()) {
      Path file = Files.createTempFile("lease-sched-", ".db");
      file.toFile().deleteOnExit();
      url = file.toString();
      ds = TestDatabase.sqliteDataSource(url);
    } else {
      url = db.url();
      ds = new UrlDataSource(url);
    }
    String table = TestDatabase.uniqueTable("xsched");
    String runs = TestDatabase.uniqueTable("xruns");
    List<Process> processes = new ArrayList<>();
    // the table is created once, here: concurrent CREATE TABLE IF NOT EXISTS can fail on PostgreSQL
    try (LeaseManager probe =
        LeaseManager.builder(ds).table(table).instance("probe").createTableIfMissing().build()) {
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "CREATE TABLE "
                + runs
                + " (instant_ms bigint NOT NULL,"
                + " replica varchar(64) NOT NULL, kind varchar(16) NOT NULL, at_ms bigint NOT NULL)");
      }
      long anchor = probe.databaseTimeMillis();
      Schedule schedule =
          Schedule.fixedRate(Duration.ofMillis(periodMs), Instant.ofEpochMilli(anchor));
      try {
        for (String name : List.of("p1", "p2", "p3")) {
          processes.add(launch(db, url, table, runs, periodMs, anchor, name, broken));
        }
        // rounds of cold JVMs on a shared machine may overrun the period: count skipped instants
        // too
        awaitUntil(
            Duration.ofSeconds(90),
            () ->
                distinctInstants(ds, runs) >= instants || (broken && duplicatedRuns(ds, runs) > 0),
            instants + " instants ran or were skipped across the processes");
        long stop = probe.databaseTimeMillis();
        Map<Long, List<SchedulerReplicas.Run>> ran = new TreeMap<>();
        Map<Long, List<String>> skipped = new TreeMap<>();
        read(ds, runs, stop, ran, skipped);
        return new Result(ran, skipped, schedule);
      } finally {
        stopAll(processes);
        TestDatabase.dropQuietly(ds, table, runs);
      }
    }
  }

  private static Process launch(
      TestDatabase db,
      String url,
      String table,
      String runs,
      long periodMs,
      long anchor,
      String name,
      boolean broken)
      throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    // surefire may put only its booter jar on java.class.path; it passes the real one here
    String cp =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> cmd =
        new ArrayList<>(
            List.of(
                java,
                // short-lived replicas: the C1 compiler and the serial collector start them with
                // less CPU, which three cold JVMs at once on a 2-core machine are short of
                "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC",
                "-cp",
                cp,
                "-Dorg.slf4j.simpleLogger.defaultLogLevel="
                    + System.getProperty("lease.test.childLogLevel", "warn"),
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                SchedulerReplicaMain.class.getName(),
                db.toString(),
                url,
                table,
                runs,
                Long.toString(periodMs),
                Long.toString(anchor),
                name));
    if (broken) {
      cmd.add("broken");
    }
    File log = Files.createTempFile("lease-sched-" + name + "-", ".log").toFile();
    if (!Boolean.getBoolean("lease.test.keepLogs")) {
      log.deleteOnExit();
    }
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
  }

  private static void stopAll(List<Process> processes) throws InterruptedException {
    for (Process p : processes) {
      try {
        p.getOutputStream().close(); // the replica closes its scheduler and exits
      } catch (IOException e) {
        p.destroyForcibly();
      }
    }
    for (Process p : processes) {
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    }
  }

  private static int distinctInstants(DataSource ds, String runs) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COUNT(DISTINCT instant_ms) FROM " + runs)) {
      rs.next();
      return rs.getInt(1);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static int duplicatedRuns(DataSource ds, String runs) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT COUNT(*) FROM (SELECT instant_ms FROM "
                    + runs
                    + " WHERE kind = 'run' GROUP BY instant_ms HAVING COUNT(*) > 1) d")) {
      rs.next();
      return rs.getInt(1);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Reads what the processes recorded until {@code stopMs} (database clock): rounds started after
   * it may be reruns of rounds cut short by the shutdown itself, which is not what this test is
   * about.
   */
  private static void read(
      DataSource ds,
      String runs,
      long stopMs,
      Map<Long, List<SchedulerReplicas.Run>> ran,
      Map<Long, List<String>> skipped)
      throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT instant_ms, replica, kind, at_ms FROM " + runs + " ORDER BY instant_ms")) {
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          long instant = rs.getLong(1);
          String replica = rs.getString(2);
          if ("run".equals(rs.getString(3))) {
            long at = rs.getLong(4);
            if (at <= stopMs) {
              ran.computeIfAbsent(instant, k -> new ArrayList<>())
                  .add(new SchedulerReplicas.Run(replica, instant, at, false));
            }
          } else {
            skipped.computeIfAbsent(instant, k -> new ArrayList<>()).add(replica);
          }
        }
      }
    }
  }
}
