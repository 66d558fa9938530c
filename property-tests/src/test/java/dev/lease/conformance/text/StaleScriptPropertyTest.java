package dev.lease.conformance.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.QuickRun;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;

/**
 * The stale-lease SQL-text property on every database (MariaDB and MySQL Connector/J with
 * allowMultiQueries), with its negative controls: the fence reading only a text's leading keyword
 * (the first release), and no fence, must both be caught.
 */
class StaleScriptPropertyTest {

  @OnEveryDatabase
  void noScriptChangesTheCounterUnderALeaseTakenOver(TestDatabase db) {
    PropertyResult r = run(db, TextFence.STRICT, 1L);
    assertEquals(PropertyResult.Verdict.HOLDS, r.verdict(), String.valueOf(r));
  }

  @OnEveryDatabase
  void negativeControlTheLeadingKeywordReadingIsCaught(TestDatabase db) {
    PropertyResult r = run(db, TextFence.LEADING_KEYWORD, 1L);
    assertTrue(r.violations() > 0, "the first release's reading must be caught: " + r);
    assertTrue(r.failure().contains("changed the counter"), r.failure());
  }

  @OnEveryDatabase
  void negativeControlNoFenceIsCaught(TestDatabase db) {
    PropertyResult r = run(db, TextFence.NONE, 1L);
    assertTrue(r.violations() > 0, "an unfenced stale holder must be caught: " + r);
  }

  static PropertyResult run(TestDatabase db, TextFence fence, long seed) {
    return QuickRun.on(db, new StaleScriptProperty(fence), seed, fence);
  }
}
