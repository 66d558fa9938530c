package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.FailingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * What operators and health checks call: {@link LeaseManager#held()}, {@link
 * LeaseManager#describe}, {@link LeaseManager#available()} and {@link LeaseNames}.
 */
class OperatorApiTest {

  private static final LeaseTimings TIMINGS = Fixture.timings(10_000, 1_000, 5_000, 1_000, 300);

  @OnEveryDatabase
  void heldListsTheLeasesThisManagerHoldsNow(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = f.manager("holder", TIMINGS);
      LeaseManager other = f.manager("other", TIMINGS);
      assertEquals(Set.of(), m.held());
      Lease a = m.tryClaim("a").orElseThrow();
      Lease b = m.tryClaim("b").orElseThrow().hold();
      Lease elsewhere = other.tryClaim("c").orElseThrow();
      assertEquals(Set.of(a, b), m.held());
      a.release();
      assertEquals(Set.of(b), m.held());
      assertEquals(Set.of(elsewhere), other.held());
      m.close();
      assertEquals(Set.of(), m.held());
    }
  }

  @OnEveryDatabase
  void describeShowsTheRowByTheDatabaseClock(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = f.manager("billing-1", TIMINGS);
      assertEquals(Optional.empty(), m.describe("never"));
      Lease lease = m.tryClaim("billing").orElseThrow();
      LeaseInfo held = m.describe("billing").orElseThrow();
      assertEquals("billing", held.name());
      assertEquals("billing-1", held.instance());
      assertEquals(lease.term(), held.term());
      assertTrue(held.isHeld());
      Duration left = held.remaining();
      assertTrue(
          left.compareTo(Duration.ofSeconds(8)) > 0 && left.compareTo(Duration.ofSeconds(10)) <= 0,
          "expires a lease duration after the claim, by the database clock: " + left);
      lease.release();
      LeaseInfo released = m.describe("billing").orElseThrow();
      assertFalse(released.isHeld());
      assertEquals(Duration.ZERO, released.remaining());
      assertEquals("billing-1", released.instance(), "the last holder, for operators");
      assertEquals(lease.term(), released.term());
      assertThrows(IllegalArgumentException.class, () -> m.describe(""));
    }
  }

  @OnEveryDatabase
  void availableSaysWhyLeasesCannotBeHeld(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      LeaseManager m = f.track(f.builder(failing, "health").timings(TIMINGS).build());
      assertTrue(m.available().isAvailable(), m.available().toString());
      assertEquals(Optional.empty(), m.available().reason());

      failing.failing(true);
      Availability down = m.available();
      assertFalse(down.isAvailable());
      assertTrue(down.reason().orElseThrow().contains("connection refused"), down.toString());
      failing.failing(false);

      TestDatabase.dropQuietly(f.admin, f.table);
      Availability noTable = m.available();
      assertFalse(noTable.isAvailable());
      assertTrue(
          noTable.reason().orElseThrow().contains("does not exist"),
          noTable.reason().orElseThrow());

      m.close();
      assertTrue(m.available().reason().orElseThrow().contains("closed"));
    }
  }

  @Test
  void leaseNamesSayWhatIsWrong() {
    assertTrue(LeaseNames.isValid("partition-17"));
    assertEquals("partition-17", LeaseNames.validate("partition-17"));
    assertEquals(128, LeaseNames.MAX_LENGTH);
    assertTrue(LeaseNames.isValid("x".repeat(128)));
    assertTrue(LeaseNames.problem("x".repeat(129)).orElseThrow().contains("at most 128"));
    assertTrue(LeaseNames.problem("").orElseThrow().contains("empty"));
    assertTrue(LeaseNames.problem(null).orElseThrow().contains("empty"));
    assertTrue(LeaseNames.problem("a\tb").orElseThrow().contains("control characters"));
    assertTrue(LeaseNames.problem("job ").orElseThrow().contains("ends with a space"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> LeaseNames.validate("job "));
    assertTrue(e.getMessage().contains("remove it"), e.getMessage());
  }
}
