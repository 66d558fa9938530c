package dev.lease.conformance.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.QuickRun;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.TestDatabase;

/**
 * The takeover SQL-text property on every database, with its negative controls on the servers:
 * VERIFY mode (no lock) and no fence let the paused holder's script commit after the claim.
 */
class TakeoverScriptPropertyTest {

  @OnEveryDatabase
  void nothingOfAPausedScriptCommitsAfterTheClaim(TestDatabase db) {
    PropertyResult r = run(db, TextFence.STRICT);
    assertEquals(PropertyResult.Verdict.HOLDS, r.verdict(), String.valueOf(r));
  }

  @OnEveryServer
  void negativeControlVerifyModeIsCaught(TestDatabase db) {
    PropertyResult r = run(db, TextFence.VERIFY);
    assertTrue(r.violations() > 0, "VERIFY mode with a pause must be caught: " + r);
  }

  @OnEveryServer
  void negativeControlNoFenceIsCaught(TestDatabase db) {
    PropertyResult r = run(db, TextFence.NONE);
    assertTrue(r.violations() > 0, "an unfenced paused holder must be caught: " + r);
  }

  static PropertyResult run(TestDatabase db, TextFence fence) {
    return QuickRun.on(db, new TakeoverScriptProperty(fence), 1L, fence);
  }
}
