package dev.lease.spring.boot;

import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/**
 * The actuator endpoint {@code leases} ({@code /actuator/leases} once exposed): this replica's
 * instance and the leases it holds, each with its term and its expiry by the database's clock, and
 * the {@code @LeaseScheduled} jobs.
 */
@Endpoint(id = "leases")
public class LeasesEndpoint {

  private final Supplier<LeaseManager> manager;
  private final DataSource leaseDataSource;
  private final LeaseTracker tracker;
  private final Supplier<Map<String, String>> jobs;

  LeasesEndpoint(
      Supplier<LeaseManager> manager,
      DataSource leaseDataSource,
      LeaseTracker tracker,
      Supplier<Map<String, String>> jobs) {
    this.manager = manager;
    this.leaseDataSource = leaseDataSource;
    this.tracker = tracker;
    this.jobs = jobs;
  }

  @ReadOperation
  public Map<String, Object> leases() {
    LeaseManager m = manager.get();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("instance", m.instance());
    out.put("table", m.table());
    out.put("database", m.databaseProduct());
    List<Map<String, Object>> leases = new ArrayList<>();
    for (Lease lease : tracker.held()) {
      Map<String, Object> l = new LinkedHashMap<>();
      l.put("name", lease.name());
      l.put("term", lease.term());
      l.put("instance", lease.instance());
      l.put("localDeadlineRemainingMs", lease.remaining().toMillis());
      readRow(m.table(), lease, l);
      leases.add(l);
    }
    out.put("leases", leases);
    out.put("jobs", jobs.get());
    return out;
  }

  /** The lease row's expiry (database clock) and whether the database still names this holder. */
  private void readRow(String table, Lease lease, Map<String, Object> into) {
    try (Connection c = leaseDataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT holder, term, expires_at_ms FROM " + table + " WHERE name = ?")) {
      ps.setString(1, lease.name());
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          into.put("expiresAt", Instant.ofEpochMilli(rs.getLong(3)).toString());
          into.put(
              "heldInDatabase",
              lease.holder().equals(rs.getString(1)) && rs.getLong(2) == lease.term());
        }
      } finally {
        if (!c.getAutoCommit()) {
          c.rollback();
        }
      }
    } catch (SQLException e) {
      into.put("error", e.getMessage());
    }
  }
}
