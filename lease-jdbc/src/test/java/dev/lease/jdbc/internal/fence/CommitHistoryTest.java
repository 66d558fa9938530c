package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The checker itself: it reports what it must and nothing else. */
class CommitHistoryTest {

  @Test
  void aCommitInvokedAfterTheNextTermsClaimIsAViolation() {
    CommitHistory h = new CommitHistory();
    h.claimed("a", 2, 100);
    h.commit("a", 1, 150, true, "stale");
    assertEquals(1, h.violations().size());
  }

  @Test
  void refusedOverlappingAndEarlierCommitsAreNot() {
    CommitHistory h = new CommitHistory();
    h.claimed("a", 2, 100);
    h.commit("a", 1, 150, false, "refused");
    h.commit("a", 1, 90, true, "before");
    h.commit("a", 2, 150, true, "the successor's own");
    h.commit("b", 1, 150, true, "another lease");
    assertEquals(0, h.violations().size());
  }
}
