package dev.lease.core.scheduler;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;

/**
 * One scheduler replica in its own JVM, for {@link SchedulerAcrossProcessesTest}. It runs job
 * "report" on a fixed rate and records every round it runs, and every instant its listener is told
 * was skipped, in the runs table; it stops when its standard input closes.
 *
 * <p>Arguments: database label, JDBC URL (SQLite: the database file), lease table, runs table,
 * period ms, anchor ms, instance name, and optionally "broken" (ignores the last instant on record:
 * the negative control).
 */
public final class SchedulerReplicaMain {

  private SchedulerReplicaMain() {}

  public static void main(String[] args) throws Exception {
    String label = args[0];
    // pooled, as a real service would be: a new connection per statement costs more than a period
    HikariDataSource ds = TestDatabase.childPool(label, args[1], "replica-" + args[6]);
    String table = args[2];
    String runs = args[3];
    long periodMs = Long.parseLong(args[4]);
    long anchorMs = Long.parseLong(args[5]);
    String instance = args[6];
    boolean broken = args.length > 7 && "broken".equals(args[7]);

    try (LeaseManager manager =
        LeaseManager.builder(ds)
            .table(table)
            .instance(instance)
            .timings(SchedulerReplicas.TIMINGS)
            .failurePolicy(FailurePolicy.logOnly())
            .listener(
                new LeaseListener() {
                  @Override
                  public void instantSkipped(String job, long instantMs) {
                    record(ds, runs, instantMs, instance, "skipped", "-1");
                  }
                })
            .build()) {
      LeaseScheduler.Builder b =
          LeaseScheduler.builder(manager)
              .pollInterval(SchedulerReplicas.POLL)
              .job(
                  "report",
                  Schedule.fixedRate(Duration.ofMillis(periodMs), Instant.ofEpochMilli(anchorMs)),
                  round ->
                      record(
                          ds,
                          runs,
                          round.instant().toEpochMilli(),
                          instance,
                          "run",
                          LeaseInternals.dialect(manager).clock()));
      if (broken) {
        WeakenedScheduler.IGNORE_LAST_INSTANT.applyTo(b);
      }
      try (LeaseScheduler scheduler = b.build()) {
        scheduler.start();
        System.out.println("started " + instance);
        System.out.flush();
        while (System.in.read() != -1) {
          // runs until the test closes our standard input
        }
      }
    } catch (IOException e) {
      e.printStackTrace();
      System.exit(2);
    } finally {
      ds.close();
    }
  }

  /**
   * Records a run with the database clock as {@code atSql} (a SQL expression of the test's own).
   */
  private static void record(
      DataSource ds, String runs, long instantMs, String instance, String kind, String atSql) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO "
                    + runs
                    + " (instant_ms, replica, kind, at_ms) VALUES (?, ?, ?, "
                    + atSql
                    + ")")) {
      ps.setLong(1, instantMs);
      ps.setString(2, instance);
      ps.setString(3, kind);
      ps.executeUpdate();
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not record " + kind + " of " + instantMs, e);
    }
  }
}
