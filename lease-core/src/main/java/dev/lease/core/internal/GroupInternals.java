package dev.lease.core.internal;

import dev.lease.core.group.LeaseGroup;

/**
 * The hooks of {@link LeaseGroup.Builder} that applications must not call: who runs the passes
 * ({@link #passTrigger}, the simulations' virtual time) and the negative controls' weakened {@link
 * GroupRules} ({@link #rulesForTesting}, honoured only in a test JVM).
 *
 * <p><b>Not API.</b> It may change in any release. The same "shared secrets" pattern as {@link
 * LeaseInternals}: the group package registers its implementation when {@link LeaseGroup} loads.
 */
public final class GroupInternals {

  /** The group package's side. */
  public interface Access {
    void passTrigger(LeaseGroup.Builder builder, GroupPassTrigger trigger);

    void rules(LeaseGroup.Builder builder, GroupRules rules);
  }

  private static volatile Access access;

  private GroupInternals() {}

  /**
   * Called once, by {@code dev.lease.core.group} when {@link LeaseGroup} is initialised.
   *
   * @throws IllegalStateException if called again, or with another implementation
   */
  public static void register(Access implementation) {
    if (!implementation.getClass().getName().equals("dev.lease.core.group.GroupAccess")
        || implementation.getClass().getClassLoader() != GroupInternals.class.getClassLoader()) {
      throw new IllegalStateException("only lease-core's group package registers its access");
    }
    synchronized (GroupInternals.class) {
      if (access != null) {
        throw new IllegalStateException("the group package's access is already registered");
      }
      access = implementation;
    }
  }

  private static Access access() {
    Access a = access;
    if (a != null) {
      return a;
    }
    try {
      Class.forName(LeaseGroup.class.getName(), true, GroupInternals.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("lease-core is incomplete: no LeaseGroup", e);
    }
    a = access;
    if (a == null) {
      throw new IllegalStateException("the group package did not register its access");
    }
    return a;
  }

  /**
   * What runs the group's passes once it is started; default its own daemon thread. A simulation
   * passes a trigger that keeps the pass and calls it in virtual time.
   */
  public static LeaseGroup.Builder passTrigger(
      LeaseGroup.Builder builder, GroupPassTrigger trigger) {
    access().passTrigger(builder, trigger);
    return builder;
  }

  /**
   * Builds a group that runs deliberately weakened {@code rules} (their implementations live in
   * test sources or the conformance runner only): the negative controls of the tests. Honoured only
   * in a test JVM, exactly as {@link LeaseInternals#rulesForTesting}; refused anywhere else, so the
   * hook in the shipped jar cannot weaken a production group.
   *
   * @throws IllegalStateException outside a test JVM
   */
  public static LeaseGroup.Builder rulesForTesting(LeaseGroup.Builder builder, GroupRules rules) {
    if (!LeaseInternals.testJvm()) {
      throw new IllegalStateException(
          "weakened GroupRules ("
              + rules.getClass().getName()
              + ") deliberately break a lease group (negative controls of lease's own tests);"
              + " they are honoured only with lease's test support or conformance runner on the"
              + " class path, and refused here");
    }
    access().rules(builder, rules);
    return builder;
  }
}
