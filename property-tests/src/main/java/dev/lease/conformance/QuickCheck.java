package dev.lease.conformance;

import java.util.List;
import java.util.function.Predicate;
import org.quicktheories.QuickTheory;
import org.quicktheories.api.AsString;
import org.quicktheories.core.Gen;
import org.quicktheories.core.Reporter;

/**
 * Runs a QuickTheories property and keeps its falsification instead of throwing: the seed, the
 * smallest (shrunk) failing value, and the cause if the check threw.
 */
public final class QuickCheck {

  /** A falsified property: replay it with {@code qt().withFixedSeed(seed)}. */
  public record Falsified(long seed, int examples, Object smallest, Throwable cause) {}

  private QuickCheck() {}

  /**
   * @return the falsification, or null when every generated value passed
   */
  public static <T> Falsified run(
      long seed, int examples, int shrinkCycles, Gen<T> gen, Predicate<T> property) {
    Falsified[] found = new Falsified[1];
    Reporter reporter =
        new Reporter() {
          @Override
          public void falisification(
              long s,
              int n,
              Object smallest,
              Throwable cause,
              List<Object> others,
              AsString<Object> asString) {
            found[0] = new Falsified(s, n, smallest, cause);
          }

          @Override
          public void falisification(
              long s, int n, Object smallest, List<Object> others, AsString<Object> asString) {
            found[0] = new Falsified(s, n, smallest, null);
          }

          @Override
          public void valuesExhausted(int n) {}
        };
    QuickTheory.qt()
        .withFixedSeed(seed)
        .withExamples(examples)
        .withShrinkCycles(shrinkCycles)
        .withReporter(reporter)
        .forAll(gen)
        .check(property);
    return found[0];
  }
}
