package dev.lease.spring.boot;

import dev.lease.core.Lease;
import dev.lease.core.LeaseListener;
import dev.lease.core.LossReason;
import dev.lease.core.RenewalOutcome;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Micrometer meters for the lease events of this replica: a {@link LeaseListener} (the starter adds
 * it to the auto-configured {@code LeaseManager}, so lease-jdbc's transaction events reach it too)
 * and a {@link MeterBinder} (Spring Boot binds it to every registry).
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><td>{@code lease.held}</td><td>gauge: leases held now</td></tr>
 *   <tr><td>{@code lease.claims}</td><td>claims won by this replica (each a new term)</td></tr>
 *   <tr><td>{@code lease.handovers}</td><td>claims and adoptions of a lease whose previous term
 *       another instance held (or of a name with no term before): the lease came from another
 *       replica</td></tr>
 *   <tr><td>{@code lease.claims.refused}</td><td>claims that found the lease held by another
 *       holder</td></tr>
 *   <tr><td>{@code lease.renewals}</td><td>renewals, tag {@code outcome} = renewed | lost | timeout
 *       | error</td></tr>
 *   <tr><td>{@code lease.renewal.pass}</td><td>timer, no lease tag: one batched renewal pass over
 *       every lease held</td></tr>
 *   <tr><td>{@code lease.renewal.latency}</td><td>timer: duration of successful renewals, from
 *       the start of the attempt (the connection borrow included) to the renewal's event</td></tr>
 *   <tr><td>{@code lease.releases}</td><td>leases released by this replica</td></tr>
 *   <tr><td>{@code lease.transfers}</td><td>leases this replica handed to a named successor
 *       ({@code Lease.transferTo})</td></tr>
 *   <tr><td>{@code lease.adoptions}</td><td>leases transferred to this replica that it adopted
 *       (each also a hand-over when the previous term was not its own)</td></tr>
 *   <tr><td>{@code lease.losses}</td><td>leases lost, tag {@code reason} = not_held |
 *       local_deadline</td></tr>
 *   <tr><td>{@code lease.transactions}</td><td>fenced transactions, tag {@code outcome} = verified |
 *       refused | poisoned</td></tr>
 *   <tr><td>{@code lease.scheduler.instants}</td><td>instants given up, tag {@code outcome} =
 *       superseded | skipped</td></tr>
 *   <tr><td>{@code lease.calls}</td><td>{@code @Leased} calls, tag {@code outcome} = ran | skipped |
 *       lost | stopped</td></tr>
 * </table>
 *
 * <p>Every meter has the tag {@code lease} (the lease or job name) unless {@code
 * lease.metrics.lease-tag=false}: then every meter counts all leases together, for large or
 * unbounded lease sets. A new event is one line: {@code count("lease.x", lease, "outcome", ...)}.
 * The lease of the starter's start-up check ({@link FencingCheck#PROBE}) is not counted.
 *
 * <p>A hand-over is a claim or adoption whose lease came from another instance ({@link
 * Lease#fromAnotherInstance}, read by the claim statement from the row it replaced). lease-core
 * reports a single lease's renewal duration to no listener, so it is derived here, from what its
 * API documents: right after a successful renewal, {@code Lease.remaining()} is the local deadline
 * minus the time since that renewal's attempt started (the deadline counts from the start of the
 * last successful renewal), which makes that time the renewal's duration. Self-fencing is {@code
 * lease.losses} with reason {@code local_deadline}.
 *
 * <p>The counters a dashboard or alert watches for something that should not happen ({@code
 * lease.claims.refused}, {@code lease.losses} for each reason, {@code lease.scheduler.instants} for
 * each outcome) are registered at zero before their first event, so they are listed in {@code
 * /actuator/metrics} and scraped from the start: with {@code lease.metrics.lease-tag=false} when a
 * registry is bound; with the lease tag (whose values are not known in advance) for each {@code
 * LeaseScheduled} job at start and for any other lease at its first event of any kind.
 */
public final class LeaseMetrics implements LeaseListener, LeasedCallListener, MeterBinder {

  private final boolean leaseTag;
  private final List<MeterRegistry> registries = new CopyOnWriteArrayList<>();
  private final Map<String, AtomicInteger> heldByName = new ConcurrentHashMap<>();
  private final AtomicInteger heldTotal = new AtomicInteger();

  /** Lease names whose zero-valued counters are registered (lease tag only), and jobs' names. */
  private final Set<String> zeroed = ConcurrentHashMap.newKeySet();

  private final Set<String> zeroedJobs = ConcurrentHashMap.newKeySet();

  LeaseMetrics(boolean leaseTag) {
    this.leaseTag = leaseTag;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    registries.add(registry);
    if (leaseTag) {
      heldByName.forEach((name, count) -> heldGauge(registry, name, count));
      zeroed.forEach(name -> registerZeros(registry, name, false));
      zeroedJobs.forEach(name -> registerZeros(registry, name, true));
    } else {
      Gauge.builder("lease.held", heldTotal, AtomicInteger::get)
          .description("leases this replica holds")
          .strongReference(true)
          .register(registry);
      registerZeros(registry, null, true);
    }
  }

  /**
   * The {@code LeaseScheduled} jobs (their lease names): their counters at zero from the start.
   * Called by the starter once every bean is made.
   */
  void jobs(Collection<String> names) {
    for (String name : names) {
      if (leaseTag && !FencingCheck.PROBE.equals(name) && zeroedJobs.add(name)) {
        zeroed.add(name);
        for (MeterRegistry r : registries) {
          registerZeros(r, name, true);
        }
      }
    }
  }

  /** The first event of lease {@code name}: its counters at zero (with the lease tag). */
  private void seen(String name) {
    if (leaseTag && zeroed.add(name)) {
      for (MeterRegistry r : registries) {
        registerZeros(r, name, false);
      }
    }
  }

  /**
   * Registers, at zero, the counters of events that should not happen, for lease {@code name}
   * (null: no lease tag); a counter registered already is left as it is.
   */
  private void registerZeros(MeterRegistry registry, String name, boolean job) {
    Tags tags = tags(name);
    registry.counter("lease.claims.refused", tags);
    for (LossReason reason : LossReason.values()) {
      registry.counter("lease.losses", tags.and("reason", reason.name().toLowerCase(Locale.ROOT)));
    }
    if (job) {
      for (String outcome : new String[] {"superseded", "skipped"}) {
        registry.counter("lease.scheduler.instants", tags.and("outcome", outcome));
      }
    }
  }

  // ---- lease events -----------------------------------------------------------------------------

  @Override
  public void claimed(Lease lease) {
    if (ignored(lease)) {
      return;
    }
    held(lease.name(), +1);
    count("lease.claims", lease.name());
    if (lease.fromAnotherInstance()) {
      count("lease.handovers", lease.name());
    }
  }

  @Override
  public void claimRefused(String name) {
    if (FencingCheck.PROBE.equals(name)) {
      return;
    }
    count("lease.claims.refused", name);
  }

  @Override
  public void renewed(Lease lease) {
    if (ignored(lease)) {
      return;
    }
    // the lease's local deadline now counts from the start of this renewal (the listener runs right
    // after it was recorded), so what is missing of it is the time the renewal took; lease-core
    // calls this before renewalCompleted, so a reader that sees n renewals sees their latencies
    Duration took = lease.manager().timings().localDeadline().minus(lease.remaining());
    if (!took.isNegative() && lease.isHeld()) {
      for (MeterRegistry r : registries) {
        Timer.builder("lease.renewal.latency")
            .description("duration of successful lease renewals")
            .tags(tags(lease.name()))
            .register(r)
            .record(took);
      }
    }
  }

  @Override
  public void renewalCompleted(Lease lease, RenewalOutcome outcome) {
    if (ignored(lease)) {
      return;
    }
    count("lease.renewals", lease.name(), "outcome", outcome.name().toLowerCase(Locale.ROOT));
  }

  @Override
  public void renewalPass(int leases, int renewed, int lost, int failed, Duration elapsed) {
    for (MeterRegistry r : registries) {
      Timer.builder("lease.renewal.pass")
          .description("duration of one batched renewal pass over every lease this replica holds")
          .register(r)
          .record(elapsed);
    }
  }

  @Override
  public void lost(Lease lease, LossReason reason) {
    if (ignored(lease)) {
      return;
    }
    held(lease.name(), -1);
    count("lease.losses", lease.name(), "reason", reason.name().toLowerCase(Locale.ROOT));
  }

  @Override
  public void released(Lease lease) {
    if (ignored(lease)) {
      return;
    }
    held(lease.name(), -1);
    count("lease.releases", lease.name());
  }

  @Override
  public void transferred(Lease lease, String successor, long newTerm) {
    if (ignored(lease)) {
      return;
    }
    held(lease.name(), -1);
    count("lease.transfers", lease.name());
  }

  @Override
  public void adopted(Lease lease) {
    if (ignored(lease)) {
      return;
    }
    held(lease.name(), +1);
    count("lease.adoptions", lease.name());
    if (lease.fromAnotherInstance()) {
      count("lease.handovers", lease.name());
    }
  }

  @Override
  public void transactionVerified(Lease lease) {
    if (ignored(lease)) {
      return;
    }
    count("lease.transactions", lease.name(), "outcome", "verified");
  }

  @Override
  public void transactionRefused(Lease lease) {
    if (ignored(lease)) {
      return;
    }
    count("lease.transactions", lease.name(), "outcome", "refused");
  }

  @Override
  public void transactionPoisoned(Lease lease) {
    if (ignored(lease)) {
      return;
    }
    count("lease.transactions", lease.name(), "outcome", "poisoned");
  }

  @Override
  public void instantSuperseded(String job, long instantMs) {
    count("lease.scheduler.instants", job, "outcome", "superseded");
  }

  @Override
  public void instantSkipped(String job, long instantMs) {
    count("lease.scheduler.instants", job, "outcome", "skipped");
  }

  @Override
  public void called(String lease, Outcome outcome) {
    count("lease.calls", lease, "outcome", outcome.name().toLowerCase(Locale.ROOT));
  }

  // ---- helpers ----------------------------------------------------------------------------------

  private static boolean ignored(Lease lease) {
    return FencingCheck.PROBE.equals(lease.name());
  }

  private void count(String meter, String lease, String... keyValues) {
    seen(lease);
    Tags tags = tags(lease).and(keyValues);
    for (MeterRegistry r : registries) {
      r.counter(meter, tags).increment();
    }
  }

  private Tags tags(String lease) {
    return leaseTag && lease != null ? Tags.of(Tag.of("lease", lease)) : Tags.empty();
  }

  private void held(String name, int delta) {
    heldTotal.addAndGet(delta);
    if (!leaseTag) {
      return;
    }
    AtomicInteger count = heldByName.get(name);
    if (count == null) {
      AtomicInteger fresh = new AtomicInteger();
      count = heldByName.putIfAbsent(name, fresh);
      if (count == null) {
        count = fresh;
        for (MeterRegistry r : registries) {
          heldGauge(r, name, fresh);
        }
      }
    }
    count.addAndGet(delta);
  }

  private static void heldGauge(MeterRegistry registry, String name, AtomicInteger count) {
    Gauge.builder("lease.held", count, AtomicInteger::get)
        .description("leases this replica holds")
        .tag("lease", name)
        .strongReference(true)
        .register(registry);
  }
}
