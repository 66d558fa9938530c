package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.CountingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A release of many leases (a manager's close, a group's drain, close or shed) sends one statement
 * per up to 1,000 leases, after the work under every one of them stopped. Counted through {@link
 * CountingDataSource}: the release statements are those that set {@code expires_at_ms = 0}.
 * Negative controls: a statement per lease (RELEASE_ONE_BY_ONE) is caught by the same count; a
 * release before the work stopped (RELEASE_BEFORE_STOPPING_WORK) by the same ordering check.
 */
class BatchReleaseTest {

  /** Renewals every 5 s: no renewal pass between the claims and the close. */
  static final LeaseTimings TIMINGS = Fixture.timings(30_000, 5_000, 20_000, 5_000, 2_000);

  @OnEveryDatabase
  void closeReleasesTwentyLeasesInOneStatement(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertEquals(1, releaseStatementsOfClose(f, 20, null), db + ": release statements of 20");
    }
  }

  /** Negative control: a statement per lease is caught by the same count. */
  @OnEveryDatabase
  void aStatementPerLeaseIsCaughtByTheSameCount(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertEquals(
          20, releaseStatementsOfClose(f, 20, WeakenedLifecycle.releaseOneByOne()), db.toString());
    }
  }

  /** 1,001 leases: two statements, the batch is cut at 1,000 names. */
  @OnEveryDatabase
  void aReleaseIsCutIntoStatementsOfAThousandLeases(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertEquals(2, releaseStatementsOfClose(f, 1_001, null), db + ": statements of 1,001");
    }
  }

  /**
   * Holds {@code n} leases, closes the manager; the release statements of the close. Every row is
   * released afterwards (a successor claims each at the next term).
   */
  private static long releaseStatementsOfClose(Fixture f, int n, WeakenedLifecycle fault)
      throws Exception {
    CountingDataSource counting = new CountingDataSource(f.pool(4));
    LeaseManager.Builder b = f.builder(counting, "closing").timings(TIMINGS);
    LeaseManager m = f.build(b, fault);
    List<Lease> leases = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      leases.add(m.tryClaim(String.format("rel-%04d", i)).orElseThrow().hold());
    }
    int before = counting.texts().size();
    m.close();
    List<String> texts = counting.texts();
    long releases =
        texts.subList(before, texts.size()).stream()
            .filter(t -> t.contains("expires_at_ms = 0"))
            .count();
    for (Lease l : leases) {
      assertTrue(l.isReleased(), l + " is released");
      assertEquals(0, f.row(l.name()).expiresAtMs(), l + "'s row was given back");
    }
    LeaseManager successor = f.track(f.builder(f.pool(2), "successor").timings(TIMINGS).build());
    Lease first = leases.get(0);
    Lease last = leases.get(n - 1);
    assertTrue(successor.tryClaim(first.name()).orElseThrow().term() > first.term());
    assertTrue(successor.tryClaim(last.name()).orElseThrow().term() > last.term());
    successor.close();
    return releases;
  }

  /**
   * close() with work running under each of five leases: every work is interrupted while its row is
   * still held, and only then are the rows released, in one statement.
   */
  @OnEveryDatabase
  void everyLeasesWorkStopsBeforeTheBatchReleasesItsRow(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      Map<String, Boolean> held = rowsHeldWhenCloseInterrupted(f, null);
      assertEquals(5, held.size(), "every work was interrupted: " + held);
      assertTrue(held.values().stream().allMatch(h -> h), "rows held at the interrupt: " + held);
    }
  }

  /** Negative control: releasing first is caught by the same check. */
  @OnEveryDatabase
  void aBatchReleasedBeforeTheWorkStoppedIsCaught(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      Map<String, Boolean> held =
          rowsHeldWhenCloseInterrupted(f, WeakenedLifecycle.releaseBeforeStoppingWork());
      assertEquals(5, held.size(), "every work was interrupted: " + held);
      assertTrue(
          held.values().stream().noneMatch(h -> h),
          "negative control: the rows were released before the work stopped: " + held);
    }
  }

  private static Map<String, Boolean> rowsHeldWhenCloseInterrupted(
      Fixture f, WeakenedLifecycle fault) throws Exception {
    LeaseManager.Builder b = f.builder(f.pool(4), "working-" + fault).timings(TIMINGS);
    LeaseManager m = f.build(b, fault);
    Map<String, Boolean> heldAtInterrupt = new ConcurrentHashMap<>();
    CountDownLatch started = new CountDownLatch(5);
    ExecutorService threads = Executors.newFixedThreadPool(5);
    try {
      for (int i = 0; i < 5; i++) {
        Lease lease = m.tryClaim("work-" + fault + "-" + i).orElseThrow().hold();
        threads.submit(
            () ->
                m.runUnder(
                    lease,
                    l -> {
                      started.countDown();
                      try {
                        new CountDownLatch(1).await();
                      } catch (InterruptedException e) {
                        Fixture.Row row = f.row(l.name());
                        heldAtInterrupt.put(
                            l.name(),
                            row.holder().equals(l.holder())
                                && row.term() == l.term()
                                && row.expiresAtMs() != 0);
                        throw e;
                      }
                      return null;
                    }));
      }
      assertTrue(started.await(10, TimeUnit.SECONDS), "the works started");
      m.close();
    } finally {
      threads.shutdown();
      assertTrue(threads.awaitTermination(15, TimeUnit.SECONDS));
    }
    return heldAtInterrupt;
  }
}
