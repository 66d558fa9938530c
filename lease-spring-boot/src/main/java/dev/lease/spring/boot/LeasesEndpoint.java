package dev.lease.spring.boot;

import dev.lease.core.Availability;
import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseInfo;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseNames;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

/**
 * The actuator endpoint {@code leases} ({@code /actuator/leases} once exposed): this replica's
 * instance, whether the lease database can hold leases now, the leases this replica holds (each
 * with its term and what the database says of it: its expiry by the database clock) and the
 * {@code @LeaseScheduled} jobs. {@code /actuator/leases/{name}} tells what the database says of any
 * lease name: which instance claimed it last, its term, its expiry, whether it is held now.
 */
@Endpoint(id = "leases")
public class LeasesEndpoint {

  private final Supplier<LeaseManager> manager;
  private final Supplier<Map<String, String>> jobs;

  LeasesEndpoint(Supplier<LeaseManager> manager, Supplier<Map<String, String>> jobs) {
    this.manager = manager;
    this.jobs = jobs;
  }

  @ReadOperation
  public Map<String, Object> leases() {
    LeaseManager m = manager.get();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("instance", m.instance());
    out.put("table", m.table());
    out.put("database", m.databaseProduct());
    Availability available = m.available();
    out.put("available", available.isAvailable());
    available.reason().ifPresent(r -> out.put("error", r));
    List<Map<String, Object>> leases = new ArrayList<>();
    List<Lease> held = new ArrayList<>(m.held());
    held.sort(Comparator.comparing(Lease::name).thenComparingLong(Lease::term));
    for (Lease lease : held) {
      Map<String, Object> l = new LinkedHashMap<>();
      l.put("name", lease.name());
      l.put("term", lease.term());
      l.put("instance", lease.instance());
      l.put("localDeadlineRemainingMs", lease.remaining().toMillis());
      try {
        Optional<LeaseInfo> info = m.describe(lease.name());
        // the term identifies the claim: the database still has this replica's claim if its row
        // is at this term and not expired
        l.put(
            "heldInDatabase", info.map(i -> i.term() == lease.term() && i.isHeld()).orElse(false));
        info.ifPresent(i -> l.put("expiresAt", i.expiresAt().toString()));
      } catch (LeaseException e) {
        l.put("error", e.getMessage());
      }
      leases.add(l);
    }
    out.put("leases", leases);
    out.put("jobs", jobs.get());
    return out;
  }

  /**
   * What the database says of the lease {@code name} now, whoever holds it; null (404) if it has no
   * row.
   */
  @ReadOperation
  public Map<String, Object> lease(@Selector String name) {
    Optional<String> problem = LeaseNames.problem(name);
    if (problem.isPresent()) {
      return Map.of("name", name, "error", problem.get());
    }
    return manager.get().describe(name).map(LeasesEndpoint::describe).orElse(null);
  }

  private static Map<String, Object> describe(LeaseInfo i) {
    Map<String, Object> l = new LinkedHashMap<>();
    l.put("name", i.name());
    l.put("instance", i.instance());
    l.put("term", i.term());
    l.put("held", i.isHeld());
    l.put("expiresAt", i.expiresAt().toString());
    l.put("remainingMs", i.remaining().toMillis());
    l.put("databaseTime", i.databaseTime().toString());
    return l;
  }
}
