package dev.lease.conformance;

import dev.lease.testing.TestDatabase;

/**
 * A property checked as the tests check it: the quick size, on a test database, its result printed.
 */
public final class QuickRun {

  private QuickRun() {}

  /**
   * {@code property} checked on {@code db} with {@code seed}; prints {@code label} and the result.
   */
  public static PropertyResult on(
      TestDatabase db, ConformanceProperty property, long seed, Object label) {
    PropertyResult r =
        property.check(
            new Target(db.url(), null, null), Size.QUICK, seed, ConformanceProperty.Progress.NONE);
    System.out.println(db + " " + label + ": " + r);
    return r;
  }
}
