package dev.lease.conformance.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.QuickRun;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;

/**
 * The fault run on every database: STRICT fencing survives whole processes frozen inside their
 * transactions past their lease, and the run counts as a test only if that happened often enough
 * (takeovers across an open transaction on the servers, claims that waited for one on SQLite). Its
 * negative controls are in {@link FaultRunNegativeControlTest}.
 */
class FaultRunPropertyTest {

  @OnEveryDatabase
  void strictFencingHoldsWhenFrozenHoldersAreTakenOverOrWaitedFor(TestDatabase db) {
    PropertyResult r = QuickRun.on(db, new FaultRunProperty(), 7L, "fault-run");
    assertEquals(PropertyResult.Verdict.HOLDS, r.verdict(), r.failure() + " " + r.counts());
    String event =
        db.isSqlite()
            ? "claims that waited for a verified transaction of a holder frozen past its lease"
            : "takeovers while a verified transaction of the old term was open";
    assertTrue(r.observed(event) >= 2, r.counts().toString());
  }
}
