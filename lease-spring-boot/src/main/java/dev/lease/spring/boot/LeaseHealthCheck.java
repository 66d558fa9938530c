package dev.lease.spring.boot;

import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * The health of this replica's leases, independent of the Spring Boot line: the lease database is
 * reachable and its lease table usable, and every {@link Leased} call still running holds its
 * lease. The actuator health indicators of Boot 3 and Boot 4 report what this returns.
 */
public final class LeaseHealthCheck {

  /** Up or down, with details for the health endpoint. */
  public record Result(boolean up, Map<String, Object> details) {}

  private final Supplier<LeaseManager> manager;
  private final DataSource leaseDataSource;
  private final LeaseTracker tracker;
  private final LeasedWork work;

  LeaseHealthCheck(
      Supplier<LeaseManager> manager,
      DataSource leaseDataSource,
      LeaseTracker tracker,
      LeasedWork work) {
    this.manager = manager;
    this.leaseDataSource = leaseDataSource;
    this.tracker = tracker;
    this.work = work;
  }

  public Result check() {
    LeaseManager m = manager.get();
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("database", m.databaseProduct());
    details.put("table", m.table());
    details.put("instance", m.instance());
    boolean up = true;
    try {
      m.databaseTimeMillis();
      checkTable(m.table());
    } catch (RuntimeException | SQLException e) {
      up = false;
      details.put("error", e.getMessage());
    }
    details.put("held", tracker.held().stream().map(Lease::name).toList());
    details.put("losses", tracker.losses());
    List<String> lostWhileRunning = new ArrayList<>();
    for (LeasedWork.Running r : work.running()) {
      if (r.lease().isLost()) {
        lostWhileRunning.add(r.lease().name());
      }
    }
    if (!lostWhileRunning.isEmpty()) {
      up = false;
      details.put("lostWhileRunning", lostWhileRunning);
    }
    return new Result(up, details);
  }

  /** Reads no row, but needs the lease table and its columns. */
  private void checkTable(String table) throws SQLException {
    try (Connection c = leaseDataSource.getConnection();
        Statement s = c.createStatement()) {
      s.setQueryTimeout((int) Math.max(1, manager.get().timings().attemptTimeout().toSeconds()));
      try (ResultSet rs =
          s.executeQuery(
              "SELECT name, holder, instance, term, expires_at_ms FROM "
                  + table
                  + " WHERE 1 = 0")) {
        rs.next();
      } finally {
        if (!c.getAutoCommit()) {
          c.rollback();
        }
      }
    } catch (SQLException e) {
      throw new SQLException(
          "the lease table " + table + " cannot be read: " + e.getMessage(), e.getSQLState(), e);
    }
  }
}
