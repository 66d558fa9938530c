package dev.lease.agent;

import dev.lease.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * A measurement, nothing asserted: how many connections the agent's lease statements open per
 * minute on PostgreSQL, with its kept connections and without them (every statement on a new
 * connection, as the agent did before it kept any: {@code lease.agent.testing.disable=lease-pool}).
 * Two JVMs of the legacy writer (HikariCP, two connections) in leader mode, a leader and a replica,
 * on a database of their own, so that the server's count of sessions established to it ({@code
 * pg_stat_database.sessions}) counts theirs alone; beside it, each agent's debug log of the
 * connections it opened. Writes target/lease-connections-postgresql.txt; docs/agent.md quotes a
 * run.
 *
 * <p>A long run (a minute per case by default; {@code -Dlease.agent.measure.seconds=N}), so not
 * part of {@code mvn verify}: run it with {@code -Dlease.agent.measure=true
 * -Dit.test=LeaseConnectionsIT}. It creates the database {@code agent_sessions_PID} and drops it.
 */
@EnabledIfSystemProperty(named = "lease.agent.measure", matches = "true")
class LeaseConnectionsIT {

  private static final String LEASE = "measured-leader";

  @Test
  void measureLeaseConnectionsPerMinute_postgresql() throws Exception {
    int seconds = Integer.getInteger("lease.agent.measure.seconds", 60);
    String name = "agent_sessions_" + ProcessHandle.current().pid();
    String admin = TestDatabase.POSTGRESQL.url();
    String url = admin.replace("/test?", "/" + name + "?");
    execute(admin, "CREATE DATABASE " + name);
    List<String> report = new ArrayList<>();
    try {
      for (String duration : List.of("2s", "15s")) {
        for (boolean kept : List.of(false, true)) {
          report.add(measure(admin, name, url, duration, kept, seconds));
          System.out.println("lease connections: " + report.get(report.size() - 1));
        }
      }
    } finally {
      execute(admin, "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    }
    Path dir = Path.of("target");
    if (Files.isDirectory(dir)) {
      Files.write(dir.resolve("lease-connections-postgresql.txt"), report);
    }
  }

  private static String measure(
      String admin, String name, String url, String duration, boolean kept, int seconds)
      throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL, url)) {
      List<String> options = kept ? List.of() : List.of("-Dlease.agent.testing.disable=lease-pool");
      try (AppProcess a = writer(d, "A", duration, options)) {
        a.awaitLine(l -> l.startsWith("COMMITTED"), "a commit of the leader A");
        try (AppProcess b = writer(d, "B", duration, options)) {
          b.awaitLine(l -> l.startsWith("REFUSED"), "a refusal of the replica B");
          long sessions0 = sessions(admin, name);
          long a0 = PoolLeaderModeIT.leaseConnections(a);
          long b0 = PoolLeaderModeIT.leaseConnections(b);
          long renewals0 = renewals(a);
          Thread.sleep(seconds * 1000L); // the measurement window, not a synchronisation
          long sessions = sessions(admin, name) - sessions0;
          return String.format(
              "lease-duration=%s, %s: over %d s, %d sessions established to the database; the"
                  + " agents' lease connections: leader %d, replica %d (leader renewals %d);"
                  + " load %s",
              duration,
              kept ? "kept connections" : "a connection per statement",
              seconds,
              sessions,
              PoolLeaderModeIT.leaseConnections(a) - a0,
              PoolLeaderModeIT.leaseConnections(b) - b0,
              renewals(a) - renewals0,
              String.join(
                  " ",
                  List.of(Files.readString(Path.of("/proc/loadavg")).split(" ")).subList(0, 3)));
        }
      }
    }
  }

  private static AppProcess writer(
      LegacyDatabase d, String instance, String duration, List<String> options) {
    return d.writer(
        instance,
        d.agentArgs(
            "mode=leader,lease="
                + LEASE
                + ",lease-duration="
                + duration
                + ",instance="
                + instance
                + ",log-level=debug"),
        options,
        "hikari");
  }

  private static long renewals(AppProcess app) {
    return app.stderr().lines().filter(l -> l.contains("renewed lease " + LEASE)).count();
  }

  /**
   * Sessions established to database {@code name} so far, as the server counts them, asked from
   * another database.
   */
  private static long sessions(String admin, String name)
      throws SQLException, InterruptedException {
    Thread.sleep(1100); // the server's statistics are flushed at most once a second
    try (Connection c = DriverManager.getConnection(admin);
        Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_clear_snapshot()");
      try (ResultSet rs =
          s.executeQuery("SELECT sessions FROM pg_stat_database WHERE datname = '" + name + "'")) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static void execute(String url, String sql) throws SQLException {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
