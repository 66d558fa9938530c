package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.opentest4j.AssertionFailedError;

/**
 * Invariant 1 of DESIGN.md: at most one holder per term, and terms grow with every hand-over. 16
 * threads across two managers (distinct instances, distinct pools) race for one name, round after
 * round; in each round every thread tries once, exactly one wins, and the winner releases only
 * after everyone has tried, so the next round is a fresh race.
 */
class ClaimRaceTest {

  private static final int THREADS = 16;
  private static final int ROUNDS = 25;
  private static final String NAME = "race";

  /** One successful claim: which round, which term, which holder token. */
  record Claim(int round, long term, String holder) {}

  /** One racing thread's claim: the claim, or empty if someone else holds the name. */
  interface ClaimCall {
    Optional<Claim> claim(int thread, int round) throws Exception;
  }

  /** Releases what {@code thread} claimed in this round. */
  interface ReleaseCall {
    void release(int thread) throws Exception;
  }

  static List<TestDatabase> databases() {
    return TestDatabase.all().toList();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  void exactlyOneHolderPerTermAndTermsGrowWithEveryHandOver(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseTimings t = Fixture.timings(30_000, 2_000, 10_000, 5_000, 1_000);
      LeaseManager a = f.manager(f.pool(8), "instance-a", t);
      LeaseManager b = f.manager(f.pool(8), "instance-b", t);
      List<Claim> claims = claimRace(a, b, ROUNDS);
      assertOneHolderPerTermGrowing(claims);
      assertEquals(
          claims.get(claims.size() - 1).term(),
          f.row(NAME).term(),
          "the row's term is the last claim's");
    }
  }

  /** Threads of {@code a} and {@code b} race to claim {@link #NAME}, the winner releasing it. */
  private static List<Claim> claimRace(LeaseManager a, LeaseManager b, int rounds)
      throws Exception {
    Lease[] held = new Lease[THREADS];
    return race(
        (thread, round) -> {
          Optional<Lease> lease = (thread % 2 == 0 ? a : b).tryClaim(NAME);
          lease.ifPresent(l -> held[thread] = l);
          return lease.map(l -> new Claim(round, l.term(), l.holder()));
        },
        thread -> {
          held[thread].release();
          held[thread] = null;
        },
        rounds);
  }

  /**
   * The same race when the application's pools default to SERIALIZABLE (or REPEATABLE READ): lease
   * statements choose their own isolation, so a lost race is still an empty claim, not a
   * serialization error.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  void raceIsTheSameWhenThePoolsDefaultToSerializable(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseTimings t = Fixture.timings(30_000, 2_000, 10_000, 5_000, 1_000);
      LeaseManager a =
          f.manager(
              f.pool(8, c -> c.setTransactionIsolation("TRANSACTION_SERIALIZABLE")),
              "instance-a",
              t);
      LeaseManager b =
          f.manager(
              f.pool(
                  8,
                  c ->
                      c.setTransactionIsolation(
                          db.isSqlite()
                              ? "TRANSACTION_SERIALIZABLE"
                              : "TRANSACTION_REPEATABLE_READ")),
              "instance-b",
              t);
      List<Claim> claims = claimRace(a, b, 10);
      assertOneHolderPerTermGrowing(claims);
    }
  }

  /**
   * Negative control: a check-then-act claimer (read the row, decide, then write without
   * re-checking) under the schedule where every thread reads before anyone writes. The same check
   * must catch it.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  void checkThenActClaimIsCaughtByTheSameCheck(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      f.manager("setup", Fixture.timings(30_000, 2_000, 10_000, 5_000, 1_000))
          .tryClaim(NAME)
          .orElseThrow()
          .release(); // creates the row
      DataSource ds = f.pool(THREADS);
      CyclicBarrier allRead = new CyclicBarrier(THREADS);
      List<Claim> claims =
          race(
              (thread, round) -> {
                long term;
                long expires;
                long now;
                try (Connection c = ds.getConnection();
                    PreparedStatement ps =
                        c.prepareStatement(
                            "SELECT term, expires_at_ms FROM " + f.table + " WHERE name = ?")) {
                  ps.setString(1, NAME);
                  try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    term = rs.getLong(1);
                    expires = rs.getLong(2);
                  }
                  now = System.currentTimeMillis();
                  if (!c.getAutoCommit()) {
                    c.commit();
                  }
                }
                allRead.await(
                    10, TimeUnit.SECONDS); // the worst schedule: every read before any write
                if (expires > now) {
                  return Optional.empty();
                }
                String holder = "broken-" + thread + "-" + round;
                try (Connection c = ds.getConnection();
                    PreparedStatement ps =
                        c.prepareStatement(
                            "UPDATE "
                                + f.table
                                + " SET holder = ?, term = ?, expires_at_ms = ? WHERE name = ?")) {
                  ps.setString(1, holder);
                  ps.setLong(2, term + 1);
                  ps.setLong(3, now + 30_000);
                  ps.setString(4, NAME);
                  ps.executeUpdate();
                  if (!c.getAutoCommit()) {
                    c.commit();
                  }
                }
                return Optional.of(new Claim(round, term + 1, holder));
              },
              thread -> {},
              1);
      AssertionFailedError caught =
          assertThrows(AssertionFailedError.class, () -> assertOneHolderPerTermGrowing(claims));
      assertTrue(caught.getMessage().contains("winner"), caught.getMessage());
    }
  }

  /**
   * Runs {@code rounds} rounds: all threads claim after a barrier, then after a second barrier the
   * round's winners release. Returns every successful claim.
   */
  private static List<Claim> race(ClaimCall claim, ReleaseCall releaser, int rounds)
      throws Exception {
    ConcurrentLinkedQueue<Claim> claims = new ConcurrentLinkedQueue<>();
    CyclicBarrier start = new CyclicBarrier(THREADS);
    CyclicBarrier tried = new CyclicBarrier(THREADS);
    AtomicReference<Throwable> firstFailure = new AtomicReference<>();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    ExecutorCompletionService<Object> done = new ExecutorCompletionService<>(pool);
    try {
      for (int i = 0; i < THREADS; i++) {
        int thread = i;
        done.submit(
            () -> {
              try {
                for (int round = 0; round < rounds; round++) {
                  start.await(30, TimeUnit.SECONDS);
                  Optional<Claim> won = claim.claim(thread, round);
                  won.ifPresent(claims::add);
                  tried.await(30, TimeUnit.SECONDS);
                  if (won.isPresent()) {
                    releaser.release(thread);
                  }
                }
              } catch (Throwable t) {
                if (!(t instanceof BrokenBarrierException)) {
                  firstFailure.compareAndSet(null, t);
                }
                throw t;
              }
              return null;
            });
      }
      for (int i = 0; i < THREADS; i++) {
        Future<Object> finished = done.poll(120, TimeUnit.SECONDS);
        if (finished == null) {
          throw new AssertionError("the race did not finish within 120 s");
        }
        try {
          finished.get();
        } catch (ExecutionException e) {
          pool.shutdownNow(); // interrupts the others out of their barriers
          firstFailure.compareAndSet(null, e.getCause());
          break;
        }
      }
      if (firstFailure.get() != null) {
        throw new AssertionError(
            "a racing thread failed: " + firstFailure.get(), firstFailure.get());
      }
    } finally {
      pool.shutdownNow();
    }
    return new ArrayList<>(claims);
  }

  /**
   * Exactly one winner per round; terms distinct and growing round after round (not consecutive:
   * {@code max(term + 1, clock in µs)}); holder tokens never reused.
   */
  static void assertOneHolderPerTermGrowing(List<Claim> claims) {
    TreeMap<Integer, List<Claim>> byRound = new TreeMap<>();
    for (Claim c : claims) {
      byRound.computeIfAbsent(c.round(), r -> new ArrayList<>()).add(c);
    }
    for (var round : byRound.entrySet()) {
      assertEquals(
          1,
          round.getValue().size(),
          "exactly one winner in round " + round.getKey() + ": " + round.getValue());
    }
    Set<Long> terms = new HashSet<>();
    Set<String> holders = new HashSet<>();
    long previous = -1;
    for (List<Claim> round : byRound.values()) {
      Claim c = round.get(0);
      assertTrue(terms.add(c.term()), "term " + c.term() + " given twice: " + claims);
      assertTrue(holders.add(c.holder()), "holder " + c.holder() + " reused: " + claims);
      if (previous >= 0) {
        assertTrue(c.term() > previous, "terms grow with every hand-over: " + claims);
      }
      previous = c.term();
    }
  }
}
