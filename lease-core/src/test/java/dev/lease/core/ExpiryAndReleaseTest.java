package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.opentest4j.AssertionFailedError;

/**
 * Expiry is decided by the database's clock alone; release frees a lease at once; a holder that
 * lost or released its lease gets false from renew and verify, and cannot release its successor's
 * lease.
 */
class ExpiryAndReleaseTest {

  private static final long LEASE_MS = 1_500;
  private static final LeaseTimings TIMINGS = Fixture.timings(LEASE_MS, 100, 1_000, 500, 200);

  @OnEveryDatabase
  void leaseExpiresByTheDatabaseClockAndNotBefore(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager a = f.manager("a", TIMINGS);
      LeaseManager b = f.manager("b", TIMINGS);
      long before = a.databaseTimeMillis();
      Lease first = a.tryClaim("expiry").orElseThrow();
      long after = a.databaseTimeMillis();
      Fixture.Row row = f.row("expiry");
      assertEquals(first.term(), row.term());
      assertEquals(first.holder(), row.holder());
      assertEquals("a", row.instance());
      // expires_at_ms = the database's now inside the claim + lease
      assertTrue(
          row.expiresAtMs() >= before + LEASE_MS && row.expiresAtMs() <= after + LEASE_MS,
          "expires_at_ms "
              + row.expiresAtMs()
              + " within ["
              + (before + LEASE_MS)
              + ", "
              + (after + LEASE_MS)
              + "]");

      Optional<Lease> second =
          claimOnlyAfterExpiry(
              () -> b.tryClaim("expiry"), b::databaseTimeMillis, row.expiresAtMs());
      Fixture.Row taken = f.row("expiry");
      assertTrue(second.get().term() > first.term());
      assertEquals(second.get().holder(), taken.holder());
      assertNotEquals(first.holder(), second.get().holder());
      assertTrue(
          taken.expiresAtMs() - LEASE_MS >= row.expiresAtMs(),
          "the claim's database time "
              + (taken.expiresAtMs() - LEASE_MS)
              + " is at or after the expiry "
              + row.expiresAtMs());
    }
  }

  /**
   * Negative control: a claim that forgets the expiry predicate ({@code expires_at_ms <= :now}) is
   * caught by the same check.
   */
  @OnEveryDatabase
  void claimIgnoringTheExpiryIsCaughtByTheSameCheck(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager a = f.manager("a", TIMINGS);
      a.tryClaim("expiry").orElseThrow();
      long expires = f.row("expiry").expiresAtMs();
      AssertionFailedError caught =
          assertThrows(
              AssertionFailedError.class,
              () ->
                  claimOnlyAfterExpiry(
                      () -> {
                        return Optional.of(
                            f.update(
                                "UPDATE "
                                    + f.table
                                    + " SET term = term + 1, holder = 'broken' WHERE name = ?",
                                "expiry"));
                      },
                      a::databaseTimeMillis,
                      expires));
      assertTrue(caught.getMessage().contains("before the expiry"), caught.getMessage());
    }
  }

  /**
   * Claims with {@code claim} until it succeeds; every attempt that the database's clock, read
   * right after it, places before {@code expiresAtMs} must have been refused.
   */
  private static <T> Optional<T> claimOnlyAfterExpiry(
      Supplier<Optional<T>> claim, LongSupplier dbNow, long expiresAtMs) {
    Optional<T> claimed = Optional.empty();
    int refused = 0;
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (claimed.isEmpty()) {
      assertTrue(System.nanoTime() < deadline, "could not claim within 10 s");
      claimed = claim.get();
      long dbNowAfterAttempt = dbNow.getAsLong();
      if (dbNowAfterAttempt < expiresAtMs) {
        // the claim statement ran before this clock read, so before the expiry
        assertTrue(
            claimed.isEmpty(),
            "claimed at database time <= "
                + dbNowAfterAttempt
                + ", before the expiry "
                + expiresAtMs);
        refused++;
      }
    }
    assertTrue(refused > 0, "refused at least once while the lease was live");
    return claimed;
  }

  @OnEveryDatabase
  void releaseLetsAnotherClaimAtOnce(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseTimings longLease = Fixture.timings(60_000, 2_000, 10_000, 5_000, 1_000);
      LeaseManager a = f.manager("a", longLease);
      LeaseManager b = f.manager("b", longLease);
      Lease first = a.tryClaim("release").orElseThrow();
      assertTrue(b.tryClaim("release").isEmpty(), "held for a minute");
      first.release();
      assertTrue(first.isReleased());
      assertFalse(first.isHeld());
      assertFalse(first.isLost(), "released is not lost");
      Lease second =
          b.tryClaim("release")
              .orElseThrow(() -> new AssertionError("b could not claim right after the release"));
      assertTrue(second.term() > first.term());
      assertFalse(first.renew(), "renew after release");
      assertFalse(first.verify(), "verify after release");
      first.release(); // idempotent
      assertTrue(second.verify(), "the successor still holds it");
      assertEquals(second.holder(), f.row("release").holder());
    }
  }

  @OnEveryDatabase
  void renewExtendsTheExpiryByTheDatabaseClock(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager a = f.manager("a", Fixture.timings(10_000, 1_000, 5_000, 2_000, 200));
      Lease lease = a.tryClaim("renew").orElseThrow();
      Fixture.Row claimed = f.row("renew");
      long before = a.databaseTimeMillis();
      assertTrue(lease.renew());
      long after = a.databaseTimeMillis();
      Fixture.Row renewed = f.row("renew");
      assertTrue(
          renewed.expiresAtMs() >= before + 10_000 && renewed.expiresAtMs() <= after + 10_000,
          "renewed expiry "
              + renewed.expiresAtMs()
              + " within ["
              + (before + 10_000)
              + ", "
              + (after + 10_000)
              + "]");
      assertTrue(renewed.revision() > claimed.revision(), "a renewal always changes the row");
      assertEquals(claimed.term(), renewed.term(), "renewal keeps the term");
      assertTrue(lease.verify());
    }
  }

  /**
   * A holder whose own clock stands still (a paused process) never reaches its local deadline; the
   * database still expires its lease, lets another claim, and then tells the old holder it lost.
   */
  @OnEveryDatabase
  void holderThatOversleptItsLeaseIsToldByTheDatabase(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      AtomicLong frozen = new AtomicLong(System.nanoTime());
      LeaseManager paused =
          f.track(f.builder(f.pool(2), "paused").timings(TIMINGS).clock(frozen::get).build());
      LeaseManager other = f.manager("other", TIMINGS);
      Lease stale = paused.tryClaim("stale").orElseThrow();
      Lease stale2 = paused.tryClaim("stale2").orElseThrow();
      Lease stale3 = paused.tryClaim("stale3").orElseThrow();
      long expires = f.row("stale3").expiresAtMs(); // claimed last, expires last
      Fixture.await(
          "the database clock to pass the expiry",
          Duration.ofSeconds(10),
          () -> other.databaseTimeMillis() >= expires);

      Lease successor = other.tryClaim("stale").orElseThrow();
      assertTrue(stale.isHeld(), "its own clock says it still holds it");
      stale.release(); // must not free the successor's lease
      assertEquals(successor.holder(), f.row("stale").holder());
      assertTrue(successor.verify(), "the successor still holds it after the stale release");
      assertTrue(other.tryClaim("stale").isEmpty());

      assertFalse(stale2.verify(), "verify after the database let it expire");
      assertTrue(stale2.isLost());
      assertEquals(Optional.of(LossReason.NOT_HELD), stale2.lossReason());
      assertFalse(stale2.renew(), "renew after loss");

      assertFalse(stale3.renew(), "renew after the database let it expire");
      assertTrue(stale3.isLost());
      assertEquals(Optional.of(LossReason.NOT_HELD), stale3.lossReason());
      assertFalse(stale3.verify(), "verify after loss");
    }
  }

  @OnEveryDatabase
  void localDeadlineEndsTheHoldWithoutAskingTheDatabase(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      AtomicLong clock = new AtomicLong(System.nanoTime());
      LeaseManager a =
          f.track(f.builder(f.pool(2), "a").timings(TIMINGS).clock(clock::get).build());
      Lease lease = a.tryClaim("deadline").orElseThrow();
      assertTrue(lease.isHeld());
      clock.addAndGet(TIMINGS.localDeadline().minusMillis(1).toNanos());
      assertTrue(lease.isHeld(), "1 ms before the local deadline");
      assertEquals(Duration.ofMillis(1), lease.remaining());
      clock.addAndGet(Duration.ofMillis(1).toNanos());
      assertFalse(lease.isHeld(), "at the local deadline");
      assertTrue(lease.isLost());
      assertEquals(Optional.of(LossReason.LOCAL_DEADLINE), lease.lossReason());
      assertEquals(Duration.ZERO, lease.remaining());
      assertFalse(lease.renew());
      assertFalse(lease.verify());
    }
  }
}
