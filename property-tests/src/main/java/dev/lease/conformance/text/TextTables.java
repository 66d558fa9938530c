package dev.lease.conformance.text;

import dev.lease.conformance.Target;
import dev.lease.core.FailurePolicy;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/** The tables of a SQL-text property run and the lease managers on them. */
final class TextTables implements AutoCloseable {

  /** Short protocol timings: a lease expires one second after its last renewal. */
  static final LeaseTimings TIMINGS =
      LeaseTimings.builder()
          .leaseDuration(Duration.ofMillis(1000))
          .renewInterval(Duration.ofMillis(200))
          .attemptTimeout(Duration.ofMillis(400))
          .localDeadline(Duration.ofMillis(600))
          .gracePeriod(Duration.ofMillis(200))
          .build();

  final Target target;
  final String leases;
  final String counter;
  final String scratch;

  TextTables(Target target) throws SQLException {
    this.target = target;
    this.leases = target.newTable("leases");
    this.counter = target.newTable("counter");
    this.scratch = target.newTable("scratch");
    LeaseManager.builder(target.dataSource())
        .table(leases)
        .instance("setup")
        .createTableIfMissing()
        .build()
        .close();
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + counter + " (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)");
      s.execute("INSERT INTO " + counter + " (id, n) VALUES (1, 0)");
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }

  /**
   * A manager whose process clock is frozen: its leases never expire for it, as a process paused
   * since its last renewal (the worst case: only the database can stop its holder).
   */
  LeaseManager frozen(String instance) {
    return LeaseInternals.clock(
            LeaseManager.builder(target.dataSource())
                .table(leases)
                .instance(instance)
                .timings(TIMINGS)
                .failurePolicy(FailurePolicy.logOnly()),
            () -> 0L)
        .build();
  }

  LeaseManager live(String instance) {
    return LeaseManager.builder(target.dataSource())
        .table(leases)
        .instance(instance)
        .timings(TIMINGS)
        .failurePolicy(FailurePolicy.logOnly())
        .build();
  }

  /** The counter table's rows and their sum, committed, as another session sees them. */
  String snapshot() throws SQLException {
    try (Connection c = target.connect();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COUNT(*), COALESCE(SUM(n), 0) FROM " + counter)) {
      rs.next();
      String v = rs.getLong(1) + " rows, sum " + rs.getLong(2);
      if (!c.getAutoCommit()) {
        c.commit();
      }
      return v;
    }
  }

  @Override
  public void close() {
    target.dropQuietly(leases, counter, scratch);
  }
}
