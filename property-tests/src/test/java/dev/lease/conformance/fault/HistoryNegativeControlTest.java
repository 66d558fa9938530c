package dev.lease.conformance.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.Target;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The fault run's history checker must be able to fail on each of its invariants: a term with two
 * holders (invariant 1), and on every database a transaction left half-applied by a broken variant
 * that writes in autocommit mode and fails midway (invariant 4). Invariant 3 is caught on the real
 * databases by {@link PausedHolderPropertyTest}'s negative controls.
 */
class HistoryNegativeControlTest {

  @Test
  void aTermWithTwoHoldersIsCaught() {
    History h = new History();
    h.claimed(new History.Claim(7, "holder-a", "p1", 1, -1));
    h.claimed(new History.Claim(7, "holder-b", "p2", 2, -1));
    List<String> v = h.check(true, 3, Map.of());
    assertEquals(1, v.size(), v.toString());
    assertTrue(v.get(0).startsWith("invariant 1: term 7 has two holders"), v.toString());
  }

  @Test
  void aCommitAfterTheNextClaimOnTheDatabaseClockIsCaught() {
    History h = new History();
    h.claimed(new History.Claim(1, "holder-a", "p1", 10, 1_000));
    h.claimed(new History.Claim(2, "holder-b", "p2", 20, 2_000));
    // real-time order unknown (invoked before the claim completed), database time after it
    h.ended(
        new History.Transaction(
            1, 1, "holder-a", 5, 15, 30, History.End.COMMITTED, 1, 2_001, null));
    List<String> v = h.check(true, 3, Map.of(1L, new long[] {3, 1}));
    assertEquals(1, v.size(), v.toString());
    assertTrue(v.get(0).contains("database time 2001, 1 ms after the claim of term 2"), v.get(0));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void aHalfAppliedTransactionIsCaught(TestDatabase db) throws Exception {
    Target target = new Target(db.url(), null, null);
    String business = target.newTable("business");
    try {
      BusinessTable.create(target, business);
      History h = new History();
      h.claimed(new History.Claim(1, "holder", "p0", 1, -1));
      try (Connection c = target.connect()) {
        // a whole transaction
        c.setAutoCommit(false);
        for (int part = 1; part <= 3; part++) {
          BusinessTable.insert(c, business, 1, part, 1);
        }
        c.commit();
        h.ended(
            new History.Transaction(1, 1, "holder", 0, 1, 2, History.End.COMMITTED, 1, -1, null));
        // the broken variant: autocommit, so the first row stays when the "transaction" fails
        c.setAutoCommit(true);
        BusinessTable.insert(c, business, 2, 1, 1);
        h.ended(
            new History.Transaction(
                2,
                1,
                "holder",
                3,
                0,
                4,
                History.End.FAILED,
                -1,
                -1,
                "application error after the first row"));
      }
      List<String> v = h.check(true, 3, BusinessTable.rows(target, business));
      assertEquals(
          List.of(
              "invariant 4: transaction 2 ended FAILED with 1 of its 3 rows in the" + " database"),
          v);
    } finally {
      target.dropQuietly(business);
    }
  }
}
