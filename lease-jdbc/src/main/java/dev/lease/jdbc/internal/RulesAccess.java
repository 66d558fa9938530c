package dev.lease.jdbc.internal;

/**
 * How {@link FenceInternals} sets the rules of a {@code FencingOptions.Builder} (a package-private
 * method of the API), below both: {@code FencingOptions} registers its setter here when it is
 * initialised, and {@code FenceInternals} finds it here, so the API's options do not depend on the
 * bridge above the fence (issue 39: no circle in lease-jdbc).
 *
 * <p><b>Not API.</b> It may change in any release.
 */
public final class RulesAccess {

  /** Sets {@code rules} on {@code builder}; {@code warn}: its fences log that they are weakened. */
  @FunctionalInterface
  public interface Setter<B> {
    void set(B builder, FenceRules rules, boolean warn);
  }

  private static Setter<?> setter; // guarded by RulesAccess.class
  private static Class<?> builderType; // guarded by RulesAccess.class

  private RulesAccess() {}

  /**
   * Called once, by {@code dev.lease.jdbc.FencingOptions} when it is initialised.
   *
   * @throws IllegalStateException if called again, or from another class
   */
  public static synchronized <B> void register(Class<B> type, Setter<B> s) {
    if (!s.getClass().getName().startsWith("dev.lease.jdbc.FencingOptions")
        || s.getClass().getClassLoader() != RulesAccess.class.getClassLoader()) {
      throw new IllegalStateException("only lease-jdbc registers its rules' setter");
    }
    if (setter != null) {
      throw new IllegalStateException("lease-jdbc's rules' setter is already registered");
    }
    setter = s;
    builderType = type;
  }

  /** The setter for builders of {@code type}, or null if none was registered (yet). */
  @SuppressWarnings("unchecked")
  static synchronized <B> Setter<B> setter(Class<B> type) {
    return builderType == type ? (Setter<B>) setter : null;
  }
}
