package dev.lease.conformance;

import dev.lease.jdbc.FencingOptions;

/**
 * Builds every {@link FencingOptions} of the suite. lease-jdbc reads its negative-control switch,
 * the system property {@value #WEAKEN}, when options are built, and a system property is the whole
 * JVM's: the runner checks several properties at once, so a control that switches it on for its own
 * fence must not be seen by another property building a STRICT fence at that moment, and two
 * controls must not restore each other's value. One lock orders all of them.
 */
public final class FencingSwitch {

  /** lease-jdbc's switch for deliberately weakened fences (negative controls only). */
  public static final String WEAKEN = "lease.jdbc.testing.weaken";

  private static final Object LOCK = new Object();

  private FencingSwitch() {}

  /** {@code builder}'s options as they are: the real fence, no control's weakening. */
  public static FencingOptions build(FencingOptions.Builder builder) {
    synchronized (LOCK) {
      return builder.build();
    }
  }

  /**
   * {@code builder}'s options with lease-jdbc's weakenings {@code weaken} (comma separated, as the
   * system property takes them), switched on while they are built.
   */
  public static FencingOptions build(FencingOptions.Builder builder, String weaken) {
    synchronized (LOCK) {
      String was = System.getProperty(WEAKEN);
      System.setProperty(WEAKEN, weaken);
      try {
        return builder.build();
      } finally {
        if (was == null) {
          System.clearProperty(WEAKEN);
        } else {
          System.setProperty(WEAKEN, was);
        }
      }
    }
  }
}
