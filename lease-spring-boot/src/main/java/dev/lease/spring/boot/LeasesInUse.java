package dev.lease.spring.boot;

import dev.lease.core.Lease;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The leases work of this replica runs under now: the running {@link Leased} calls and {@link
 * LeaseScheduled} rounds. These are the leases this replica is supposed to hold; the health
 * indicator reports those its {@code LeaseManager} no longer holds (lost, or released under the
 * work at shutdown).
 */
final class LeasesInUse {

  private final Set<Lease> inUse = ConcurrentHashMap.newKeySet();

  /** Marks {@code lease} in use until the returned handle is closed. */
  Use use(Lease lease) {
    inUse.add(lease);
    return () -> inUse.remove(lease);
  }

  /** Ends one use; closed before the lease is released, so a finished use is never reported. */
  @FunctionalInterface
  interface Use extends AutoCloseable {
    @Override
    void close();
  }

  /** The leases in use now, sorted by name and term. */
  List<Lease> leases() {
    return inUse.stream()
        .sorted(Comparator.comparing(Lease::name).thenComparingLong(Lease::term))
        .toList();
  }
}
