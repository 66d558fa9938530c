package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Issue 23, lease transfer: a holder hands its lease to a named successor in one statement that
 * writes the next term pending for the successor; the successor adopts it at that term; no third
 * process can claim in between; a successor that never adopts lets the lease expire at the bound.
 * The negative control hands over as release + claim, and the same check catches the third process
 * that gets in between.
 */
class TransferTest {

  private static final LeaseTimings TIMINGS = Fixture.timings(10_000, 1_000, 6_000, 3_000, 1_000);

  /** How a holder hands {@code lease} to the manager {@code successor}: its first step. */
  @FunctionalInterface
  interface HandOver {
    boolean begin(Lease lease, String successor);
  }

  static final HandOver TRANSFER = Lease::transferTo;

  /** The broken hand-over: give the row back and let the successor claim it. */
  static final HandOver RELEASE_THEN_CLAIM =
      (lease, successor) -> {
        lease.release();
        return true;
      };

  @OnEveryDatabase
  void theSuccessorAdoptsTheLeaseAtTheNextTermAndBothSidesAreTold(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      List<String> events = new CopyOnWriteArrayList<>();
      LeaseListener recorder =
          new LeaseListener() {
            @Override
            public void transferred(Lease lease, String successor, long newTerm) {
              events.add("transferred " + lease.term() + " to " + successor + " at " + newTerm);
            }

            @Override
            public void adopted(Lease lease) {
              events.add("adopted " + lease.term() + " by " + lease.instance());
            }

            @Override
            public void claimed(Lease lease) {
              events.add("claimed " + lease.term() + " by " + lease.instance());
            }
          };
      LeaseManager a =
          f.track(f.builder(f.pool(2), "a").timings(TIMINGS).listener(recorder).build());
      LeaseManager b =
          f.track(f.builder(f.pool(2), "b").timings(TIMINGS).listener(recorder).build());
      Lease old = a.tryClaim("job").orElseThrow().hold();
      long t = old.term();
      events.clear();

      assertTrue(old.transferTo("b"), db + ": transferred");
      assertFalse(old.isHeld(), db + ": the old lease ended");
      assertTrue(old.isReleased(), db + ": ended as a release does");
      Fixture.Row pending = f.row("job");
      assertEquals(Dialect.TRANSFER_PENDING, pending.holder(), db + ": pending holder");
      assertEquals("b", pending.instance(), db + ": for the successor");
      long next = pending.term();
      assertTrue(next > t, db + ": at a new term");
      assertFalse(old.verify(), db + ": the old holder verifies nothing");
      assertFalse(old.transferTo("b"), db + ": a second transfer writes nothing");
      assertEquals(pending, f.row("job"), db + ": the row is unchanged by it");

      Lease adopted = b.tryClaim("job").orElseThrow();
      assertEquals(next, adopted.term(), db + ": adopted at the transfer's term");
      assertTrue(adopted.verify(), db + ": the successor holds it");
      assertEquals(adopted.holder(), f.row("job").holder(), db + ": its own fresh token");
      assertTrue(b.tryAdopt("job").isEmpty(), db + ": adopted once");
      assertEquals(
          List.of("transferred " + t + " to b at " + next, "adopted " + next + " by b"),
          events,
          db + ": events of both sides");
      adopted.release();
    }
  }

  @OnEveryDatabase
  void aThirdProcessNeverWinsBetweenTheTransferAndTheAdoption(TestDatabase db) {
    Optional<Lease> third = handOverWithAThirdClaimBetween(db, TRANSFER);
    assertTrue(third.isEmpty(), db + ": the third process never wins during a transfer");
  }

  /** Negative control: a hand-over done as release + claim lets the third process in. */
  @OnEveryDatabase
  void negativeControlReleaseThenClaimLetsTheThirdProcessIn(TestDatabase db) {
    Optional<Lease> third = handOverWithAThirdClaimBetween(db, RELEASE_THEN_CLAIM);
    assertTrue(third.isPresent(), db + ": the check above catches the broken hand-over");
  }

  /**
   * The holder begins the hand-over, a third process claims, then the successor claims. Returns the
   * third process's claim (and checks the successor got the lease exactly when the third did not).
   */
  private static Optional<Lease> handOverWithAThirdClaimBetween(TestDatabase db, HandOver how) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager a = f.manager("a", TIMINGS);
      LeaseManager b = f.manager("b", TIMINGS);
      LeaseManager c = f.manager("c", TIMINGS);
      Lease old = a.tryClaim("leader").orElseThrow();
      assertTrue(how.begin(old, "b"));
      Optional<Lease> third = c.tryClaim("leader");
      Optional<Lease> successor = b.tryClaim("leader");
      assertEquals(third.isEmpty(), successor.isPresent(), db + ": exactly one holder");
      Lease winner = third.orElseGet(successor::orElseThrow);
      assertTrue(winner.term() > old.term(), db + ": one hand-over, one term");
      return third;
    }
  }

  /**
   * Many rounds of transfer while a third process claims in a loop on its own thread: it never
   * wins, and every successor adopts at the next term.
   */
  @OnEveryDatabase
  void aThirdProcessClaimingInALoopNeverWinsAcrossTransfers(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseManager[] members = {f.manager("a", TIMINGS), f.manager("b", TIMINGS)};
      LeaseManager c = f.manager("c", TIMINGS);
      Lease held = members[0].tryClaim("hot").orElseThrow();
      ExecutorService pool = Executors.newSingleThreadExecutor();
      CountDownLatch started = new CountDownLatch(1);
      List<Lease> thirdWins = new CopyOnWriteArrayList<>();
      AtomicInteger attempts = new AtomicInteger();
      Future<?> claimer =
          pool.submit(
              () -> {
                started.countDown();
                while (!Thread.currentThread().isInterrupted()) {
                  try {
                    c.tryClaim("hot").ifPresent(thirdWins::add);
                  } catch (LeaseException e) {
                    // a claim that waited out its attempt on a busy database: try again
                  } catch (IllegalStateException e) {
                    return; // the manager closed at the end of the test
                  }
                  attempts.incrementAndGet();
                }
              });
      int rounds = 20;
      try {
        assertTrue(started.await(10, TimeUnit.SECONDS));
        for (int i = 1; i <= rounds; i++) {
          LeaseManager next = members[i % 2];
          long t = held.term();
          assertTrue(held.transferTo(next.instance()), db + ": round " + i);
          // the third process completes at least one whole claim while the transfer is pending
          int seen = attempts.get();
          Fixture.await(
              "a claim of the third process",
              Duration.ofSeconds(20),
              () -> attempts.get() >= seen + 2);
          Lease adopted = next.tryClaim("hot").orElseThrow();
          assertTrue(adopted.term() > t, db + ": round " + i);
          held = adopted;
        }
      } finally {
        claimer.cancel(true);
        pool.shutdownNow();
        assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
      }
      assertEquals(List.of(), thirdWins, db + ": the third process never won");
    }
  }

  @OnEveryDatabase
  void aSuccessorThatIsGoneLetsTheLeaseExpireAtTheBound(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager a = f.manager("a", TIMINGS);
      LeaseManager c = f.manager("c", TIMINGS);
      Lease old = a.tryClaim("orphan").orElseThrow();
      assertTrue(old.transferTo("gone", Duration.ofMillis(400)));
      long transferred = f.row("orphan").term();
      assertTrue(c.tryClaim("orphan").isEmpty(), db + ": taken while the transfer is pending");
      Lease[] claimed = new Lease[1];
      Fixture.await(
          "the pending transfer to expire",
          Duration.ofSeconds(20),
          () -> (claimed[0] = c.tryClaim("orphan").orElse(null)) != null);
      assertTrue(transferred > old.term(), db + ": the transfer's term");
      assertTrue(claimed[0].term() > transferred, db + ": the next claim after the transfer");
      assertNotEquals(Dialect.TRANSFER_PENDING, f.row("orphan").holder());
    }
  }

  /**
   * A transfer racing a loss: the holder's lease expired in the database and a third process took
   * it over; the late transfer writes nothing and the successor has nothing to adopt.
   */
  @OnEveryDatabase
  void aTransferAfterATakeoverWritesNothing(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseTimings shortLease = Fixture.timings(600, 100, 400, 300, 200);
      LeaseManager a = f.manager("a", shortLease);
      LeaseManager b = f.manager("b", TIMINGS);
      LeaseManager c = f.manager("c", TIMINGS);
      Lease old = a.tryClaim("raced").orElseThrow(); // not held: it expires
      Lease[] taken = new Lease[1];
      Fixture.await(
          "the lease to expire and be taken over",
          Duration.ofSeconds(20),
          () -> (taken[0] = c.tryClaim("raced").orElse(null)) != null);
      Fixture.Row before = f.row("raced");
      assertFalse(old.transferTo("b"), db + ": not ours any more");
      assertEquals(before, f.row("raced"), db + ": nothing written");
      assertTrue(b.tryClaim("raced").isEmpty(), db + ": nothing to adopt");
      assertTrue(taken[0].verify(), db + ": the third process still holds it");
    }
  }

  /** A holder past its local deadline has lost the lease: it cannot transfer it. */
  @OnEveryDatabase
  void aHolderPastItsLocalDeadlineCannotTransfer(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      AtomicLong skew = new AtomicLong();
      LeaseManager a =
          f.track(
              LeaseInternals.clock(
                      f.builder(f.pool(2), "a").timings(TIMINGS),
                      () -> System.nanoTime() + skew.get())
                  .build());
      LeaseManager b = f.manager("b", TIMINGS);
      Lease old = a.tryClaim("late").orElseThrow();
      Fixture.Row before = f.row("late");
      skew.set(TIMINGS.localDeadline().toNanos());
      assertFalse(old.transferTo("b"), db + ": refused locally");
      assertTrue(old.isLost(), db + ": lost at its local deadline");
      assertTrue(b.tryAdopt("late").isEmpty(), db + ": nothing to adopt");
      assertNotEquals(Dialect.TRANSFER_PENDING, f.row("late").holder());
      assertTrue(f.row("late").term() == before.term(), db + ": no new term");
    }
  }

  /**
   * A transfer racing the database's expiry and a takeover: the holder's process clock is frozen
   * (its local deadline never passes, the worst case of a clock error), so only the database
   * decides whether the transfer or the third process's claim comes first. Whoever wins, one term
   * has one holder: if the transfer went through, the successor adopts that term and the third
   * process claimed none of it.
   */
  @OnEveryDatabase
  void aTransferRacingExpiryAndATakeoverKeepsOneHolderPerTerm(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseTimings shortLease = Fixture.timings(600, 100, 500, 400, 100);
      long frozen = System.nanoTime();
      LeaseManager a =
          f.track(
              LeaseInternals.clock(f.builder(f.pool(2), "a").timings(shortLease), () -> frozen)
                  .build());
      LeaseManager b = f.manager("b", TIMINGS);
      LeaseManager c = f.manager("c", TIMINGS);
      ExecutorService pool = Executors.newSingleThreadExecutor();
      int transferred = 0;
      int takenOver = 0;
      try {
        for (int round = 0; round < 6; round++) {
          String name = "race-" + round;
          Lease old = a.tryClaim(name).orElseThrow();
          long t = old.term();
          CountDownLatch go = new CountDownLatch(1);
          // the third process keeps trying until it made three more attempts after the transfer
          // returned (the transfer, and the adoption, wait for it): it meets the window between
          // them, and the successor still adopts well within the bound (one lease duration, 600 ms)
          AtomicLong decided = new AtomicLong(); // 0 until the transfer returned
          Future<Optional<Lease>> third =
              pool.submit(
                  () -> {
                    go.await();
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
                    int after = 0;
                    while (System.nanoTime() < deadline && (decided.get() == 0 || after++ < 3)) {
                      try {
                        Optional<Lease> l = c.tryClaim(name);
                        if (l.isPresent()) {
                          return l;
                        }
                      } catch (LeaseException e) {
                        // a busy database: try again
                      }
                    }
                    return Optional.empty();
                  });
          // start near the database's expiry: the two statements meet around it
          Fixture.await(
              "the expiry to come near",
              Duration.ofSeconds(5),
              () -> f.row(name).expiresAtMs() - a.databaseTimeMillis() < 40);
          go.countDown();
          Boolean done;
          try {
            done = old.transferTo("b"); // adopt within the lease duration, the longest bound
          } catch (LeaseException e) {
            done = null; // timed out: the row tells
          }
          decided.set(System.nanoTime() | 1); // never 0
          Optional<Lease> thirds = third.get(20, TimeUnit.SECONDS);
          Optional<Lease> successor = b.tryClaim(name);
          // the hand-over's new term: the successor's if it adopted, else the third's
          boolean successorHasT1 = successor.map(l -> l.term() > t).orElse(false);
          assertFalse(
              successorHasT1 && thirds.map(l -> l.term() == successor.get().term()).orElse(false),
              db + ": each term has one holder");
          if (Boolean.TRUE.equals(done)) {
            transferred++;
            assertTrue(successorHasT1, db + ": adopted at the transfer's term");
          } else if (Boolean.FALSE.equals(done)) {
            takenOver++;
            assertFalse(successorHasT1, db + ": nothing to adopt");
          }
        }
      } finally {
        pool.shutdownNow();
      }
      System.out.println(
          db + ": transfer won " + transferred + ", takeover won " + takenOver + " of 6");
    }
  }

  @OnEveryDatabase
  void badInputIsRefusedBeforeAnyStatement(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager a = f.manager("a", TIMINGS);
      Lease lease = a.tryClaim("x").orElseThrow();
      assertThrows(IllegalArgumentException.class, () -> lease.transferTo(""));
      assertThrows(IllegalArgumentException.class, () -> lease.transferTo("b", Duration.ZERO));
      assertThrows(IllegalArgumentException.class, () -> lease.transferTo("b", null));
      // the adoption bound is at most one lease duration (a crashed holder's worst case)
      IllegalArgumentException tooLong =
          assertThrows(
              IllegalArgumentException.class,
              () -> lease.transferTo("b", TIMINGS.leaseDuration().plusMillis(1)));
      assertTrue(
          tooLong.getMessage().contains("longer than the lease duration")
              && tooLong
                  .getMessage()
                  .contains("pass at most " + TIMINGS.leaseDuration().toMillis()),
          tooLong.getMessage());
      assertTrue(lease.isHeld(), db + ": still held, nothing half-applied");
      assertTrue(lease.verify());
    }
  }
}
