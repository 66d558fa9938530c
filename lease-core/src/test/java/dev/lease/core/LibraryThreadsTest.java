package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.group.LeaseGroup;
import dev.lease.core.scheduler.LeaseScheduler;
import dev.lease.core.scheduler.Schedule;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Issue 37: every thread the library starts ends after the last manager (and the schedulers and
 * groups on it) closed: the keeper, attempt, loss and work threads with their manager, the JVM-wide
 * borrow watchdog once no borrow is in flight. Managers are started, used and closed in a loop; 2 s
 * after the last close no {@code lease-} thread started during the test is alive.
 */
class LibraryThreadsTest {

  private static final Duration WITHIN = Duration.ofSeconds(2);

  static Set<Thread> leaseThreads() {
    Set<Thread> out = new HashSet<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive() && t.getName().startsWith("lease-")) {
        out.add(t);
      }
    }
    return out;
  }

  @OnEveryDatabase
  void noLibraryThreadOutlivesTheLastClose(TestDatabase db) throws Exception {
    Set<Thread> before = leaseThreads();
    String table = TestDatabase.uniqueTable("threads");
    try (HikariDataSource pool = db.pooled(6)) {
      try {
        for (int i = 0; i < 3; i++) {
          try (LeaseManager m =
              LeaseManager.builder(pool)
                  .table(table)
                  .instance("threads-" + i)
                  .timings(LeaseTimings.of(Duration.ofSeconds(3)))
                  .createTableIfMissing()
                  .build()) {
            Lease held = m.tryClaim("held").orElseThrow().hold(); // the keeper renews it
            try (LeaseScheduler s =
                    LeaseScheduler.builder(m)
                        .pollInterval(Duration.ofMillis(50))
                        .job(
                            "job",
                            Schedule.fixedRate(Duration.ofMillis(100), Instant.EPOCH),
                            round -> {})
                        .build();
                LeaseGroup g =
                    LeaseGroup.builder(m, "threads")
                        .keys(() -> List.of("a", "b"))
                        .passInterval(Duration.ofMillis(50))
                        .createTableIfMissing()
                        .build()) {
              s.start();
              g.start();
              m.runIfFree("work", lease -> null); // a work thread
              LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(300)); // let them all run
            }
            held.release();
          }
        }
      } finally {
        TestDatabase.dropQuietly(pool, table, table + "_members");
      }
    }
    long deadline = System.nanoTime() + WITHIN.toNanos();
    Set<Thread> left;
    do {
      left = leaseThreads();
      left.removeAll(before);
      if (left.isEmpty()) {
        break;
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // polled, with a deadline
    } while (System.nanoTime() - deadline < 0);
    assertTrue(
        left.isEmpty(),
        () -> "alive " + WITHIN.toMillis() + " ms after the last close: " + names(leaseThreads()));
  }

  private static String names(Set<Thread> threads) {
    return threads.stream().map(Thread::getName).sorted().toList().toString();
  }
}
