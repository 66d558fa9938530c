package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.MonotonicClock;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a {@link LeaseManager} comes to hold a lease: a claim ({@link LeaseManager#tryClaim}), the
 * adoption of a lease transferred to its instance ({@link LeaseManager#tryAdopt}), and the
 * take-over of a lease a statement of the scheduler or of a group claimed or adopted. Every lease
 * it hands out is tracked by the manager first ({@link LeaseManager#track}), then logged and
 * announced to the listeners.
 */
final class Claims {

  // the manager's logger: operators filter on it, whichever class of the manager logs
  private static final Logger log = LoggerFactory.getLogger(LeaseManager.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final LeaseManager manager;
  private final Attempts attempts;
  private final Releases releases;
  private final Dialect dialect;
  private final String instance;
  private final LeaseTimings timings;
  private final MonotonicClock clock;

  Claims(
      LeaseManager manager,
      Attempts attempts,
      Releases releases,
      Dialect dialect,
      String instance,
      LeaseTimings timings,
      MonotonicClock clock) {
    this.manager = manager;
    this.attempts = attempts;
    this.releases = releases;
    this.dialect = dialect;
    this.instance = instance;
    this.timings = timings;
    this.clock = clock;
  }

  /** {@link LeaseManager#tryClaim}. */
  Optional<Lease> tryClaim(String name) {
    LeaseNames.validate(name);
    manager.ensureOpen("claim lease " + name);
    String holder = newHolder();
    // the local deadline counts from before the claim is sent: the database's expiry can only be
    // later
    long start = clock.nanoTime();
    Dialect.ClaimResult claimed = claimStep(name, holder);
    if (claimed.term() == null && !Boolean.TRUE.equals(claimed.rowExists())) {
      // the row is missing (or the statement cannot tell, MySQL/MariaDB): one more statement, once
      // per name; it creates the row only if it is missing
      boolean created =
          attempts.executeStep(
              "create the lease row",
              (c, timeoutMs) -> dialect.createRowStep(c, name, timeoutMs),
              null);
      if (created || Boolean.FALSE.equals(claimed.rowExists())) {
        start = clock.nanoTime();
        claimed = claimStep(name, holder);
      }
    }
    if (claimed.term() == null && !Boolean.FALSE.equals(claimed.rowExists())) {
      Optional<Lease> adopted = tryAdopt(name); // a transfer to this instance: adopt it
      if (adopted.isPresent()) {
        return adopted;
      }
    }
    if (claimed.term() == null) {
      log.debug("lease {} is held by another holder", name);
      manager.safely(l -> l.claimRefused(name));
      return Optional.empty();
    }
    Lease lease =
        manager.track(
            new Lease(
                manager, name, holder, instance, claimed.term(), claimed.fromAnother(), start));
    log.info("claimed lease {} term {} instance {}", name, lease.term(), instance);
    manager.safely(l -> l.claimed(lease));
    return Optional.of(lease);
  }

  /** One claim statement; a claim that completes after its caller gave up is released at once. */
  private Dialect.ClaimResult claimStep(String name, String holder) {
    long leaseMs = timings.leaseDuration().toMillis();
    return attempts.executeStep(
        "claim lease " + name,
        (c, timeoutMs) -> dialect.claimStep(c, name, holder, instance, leaseMs, timeoutMs),
        // the caller stopped waiting (attempt timeout) and the claim went through after all:
        // nobody holds this claim, so give the row back at once
        late -> {
          if (late != null && late.term() != null) {
            releases.releaseOrphan(name, holder, late.term());
          }
        });
  }

  /** {@link LeaseManager#tryAdopt}. */
  Optional<Lease> tryAdopt(String name) {
    LeaseNames.validate(name);
    manager.ensureOpen("adopt lease " + name);
    String holder = newHolder();
    long start = clock.nanoTime();
    long leaseMs = timings.leaseDuration().toMillis();
    Long term =
        attempts.executeStep(
            "adopt lease " + name,
            (c, timeoutMs) -> dialect.adoptStep(c, name, instance, holder, leaseMs, timeoutMs),
            late -> {
              if (late != null) {
                releases.releaseOrphan(name, holder, late);
              }
            });
    if (term == null) {
      return Optional.empty();
    }
    // a transfer hands the name from the transferring instance to this one
    Lease lease = manager.track(new Lease(manager, name, holder, instance, term, true, start));
    log.info("adopted lease {} term {} instance {} (transferred to it)", name, term, instance);
    manager.safely(l -> l.adopted(lease));
    return Optional.of(lease);
  }

  /**
   * Takes over a lease claimed by a statement of the scheduler (a slot claim): tracked for {@link
   * LeaseManager#close()}, logged and announced like a claim of {@link #tryClaim}.
   *
   * @throws IllegalStateException if this manager was closed meanwhile (the claim is released)
   */
  Lease adoptClaim(
      String name, String holder, long term, boolean fromAnother, long claimStartNanos) {
    Lease lease =
        manager.track(
            new Lease(manager, name, holder, instance, term, fromAnother, claimStartNanos));
    log.info("claimed lease {} term {} instance {}", name, term, instance);
    manager.safely(l -> l.claimed(lease));
    return lease;
  }

  /**
   * {@link #adoptClaim} for a claim of many keys in one statement (a group's pass): the same
   * tracking and listeners, the per-lease line at DEBUG (the caller logs one line for the batch).
   */
  Lease adoptBatchClaim(String name, String holder, long term, long claimStartNanos) {
    // a batch claim does not say who held each key before: counted as changing hands
    Lease lease =
        manager.track(new Lease(manager, name, holder, instance, term, true, claimStartNanos));
    log.debug("claimed lease {} term {} instance {}", name, term, instance);
    manager.safely(l -> l.claimed(lease));
    return lease;
  }

  /**
   * Takes over a lease a statement of a group adopted for this instance (transferred to it, {@link
   * Lease#transferTo}): tracked like a claim, announced as {@link LeaseListener#adopted}, the
   * per-lease line at DEBUG (the caller logs one line for the batch).
   */
  Lease adoptBatchTransfer(String name, String holder, long term, long claimStartNanos) {
    Lease lease =
        manager.track(new Lease(manager, name, holder, instance, term, true, claimStartNanos));
    log.debug("adopted lease {} term {} instance {} (transferred to it)", name, term, instance);
    manager.safely(l -> l.adopted(lease));
    return lease;
  }

  static String newHolder() {
    byte[] b = new byte[16];
    RANDOM.nextBytes(b);
    return HexFormat.of().formatHex(b);
  }
}
