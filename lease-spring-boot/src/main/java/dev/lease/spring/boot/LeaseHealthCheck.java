package dev.lease.spring.boot;

import dev.lease.core.Availability;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.LossReason;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The health of this replica's leases, independent of the Spring Boot line: DOWN when the lease
 * database cannot hold leases now ({@link LeaseManager#available()}: it does not answer within the
 * attempt timeout, or the lease table is missing or not writable), or when a lease this replica is
 * supposed to hold (one that a {@link Leased} call or a {@link LeaseScheduled} round still runs
 * under) is no longer among those its manager holds ({@link LeaseManager#held()}): lost, or
 * released under the work at shutdown. The actuator health indicators of Boot 3 and Boot 4 report
 * what this returns.
 */
final class LeaseHealthCheck {

  /** Up or down, with details for the health endpoint. */
  record Result(boolean up, Map<String, Object> details) {}

  private final Supplier<LeaseManager> manager;
  private final LeasesInUse inUse;

  LeaseHealthCheck(Supplier<LeaseManager> manager, LeasesInUse inUse) {
    this.manager = manager;
    this.inUse = inUse;
  }

  Result check() {
    LeaseManager m = manager.get();
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("database", m.databaseProduct());
    details.put("table", m.table());
    details.put("instance", m.instance());
    boolean up = true;
    Availability available = m.available();
    if (!available.isAvailable()) {
      up = false;
      details.put("error", available.reason().orElse("unavailable"));
    }
    Set<Lease> held = m.held();
    details.put("held", held.stream().map(Lease::name).sorted().toList());
    List<Map<String, Object>> notHeld = new ArrayList<>();
    for (Lease lease : inUse.leases()) {
      if (!held.contains(lease)) {
        Map<String, Object> l = new LinkedHashMap<>();
        l.put("name", lease.name());
        l.put("term", lease.term());
        l.put(
            "state",
            lease.isReleased()
                ? "released"
                : "lost: "
                    + lease
                        .lossReason()
                        .orElse(LossReason.LOCAL_DEADLINE)
                        .name()
                        .toLowerCase(Locale.ROOT));
        notHeld.add(l);
      }
    }
    if (!notHeld.isEmpty()) {
      up = false;
      details.put("notHeld", notHeld);
    }
    return new Result(up, details);
  }
}
