package dev.lease.spring.boot;

import dev.lease.core.Lease;
import dev.lease.core.LeaseListener;
import dev.lease.core.LossReason;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The leases this replica's manager holds, as its events tell: claimed adds, released and lost
 * remove. What the leases endpoint lists and the health indicator reports.
 */
public final class LeaseTracker implements LeaseListener {

  private final Set<Lease> held = ConcurrentHashMap.newKeySet();
  private final AtomicLong losses = new AtomicLong();

  @Override
  public void claimed(Lease lease) {
    held.add(lease);
  }

  @Override
  public void released(Lease lease) {
    held.remove(lease);
  }

  @Override
  public void lost(Lease lease, LossReason reason) {
    held.remove(lease);
    losses.incrementAndGet();
  }

  /** The leases held now (by their local knowledge), sorted by name. */
  public List<Lease> held() {
    return held.stream()
        .filter(Lease::isHeld)
        .sorted(Comparator.comparing(Lease::name).thenComparingLong(Lease::term))
        .toList();
  }

  /** How many leases this replica lost since it started. */
  public long losses() {
    return losses.get();
  }
}
