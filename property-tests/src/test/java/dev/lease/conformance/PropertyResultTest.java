package dev.lease.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.lease.conformance.PropertyResult.Count;
import dev.lease.conformance.PropertyResult.Verdict;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The counting contract of {@link ConformanceProperty}: a run that saw too little never holds. */
class PropertyResultTest {

  private static PropertyResult result(long violations, Count... counts) {
    return new PropertyResult(
        "p",
        "sqlite",
        10,
        3,
        List.of(counts),
        violations,
        violations > 0 ? "broke" : null,
        null,
        5);
  }

  @Test
  void aRunThatObservedNothingIsInconclusiveNotAPass() {
    PropertyResult r = result(0, new Count("takeovers across an open transaction", 0, 2));
    assertEquals(Verdict.INCONCLUSIVE, r.verdict());
    assertEquals(List.of(new Count("takeovers across an open transaction", 0, 2)), r.missing());
  }

  @Test
  void tooFewOfOneEventIsInconclusiveEvenWhenTheOthersAreEnough() {
    PropertyResult r =
        result(
            0, new Count("takeovers", 5, 2), new Count("commits", 1, 2), Count.info("claims", 9));
    assertEquals(Verdict.INCONCLUSIVE, r.verdict());
  }

  @Test
  void enoughOfEveryEventHolds() {
    PropertyResult r = result(0, new Count("takeovers", 2, 2), Count.info("claims", 0));
    assertEquals(Verdict.HOLDS, r.verdict());
  }

  @Test
  void aRunThatRequiresNothingIsInconclusiveNotAPass() {
    assertEquals(Verdict.INCONCLUSIVE, result(0).verdict());
    assertEquals(Verdict.INCONCLUSIVE, result(0, Count.info("claims", 9)).verdict());
  }

  @Test
  void aViolationFailsWhateverTheCounts() {
    assertEquals(Verdict.FAILS, result(1, new Count("takeovers", 0, 2)).verdict());
  }

  @Test
  void eventNamesCannotBreakTheRunnersEncoding() {
    assertThrows(IllegalArgumentException.class, () -> new Count("a;b", 1, 1));
    assertThrows(IllegalArgumentException.class, () -> new Count("a=b", 1, 1));
  }
}
