package dev.lease.core.internal;

import dev.lease.core.group.LeaseGroup;

/**
 * What the property tests need from {@code dev.lease.core.group} and applications must not call:
 * one pass of a group run by the caller (the simulations drive passes in virtual time instead of
 * the group's own thread) and the negative controls' broken groups.
 *
 * <p><b>Not API.</b> It may change in any release. The same "shared secrets" pattern as {@link
 * LeaseInternals}: the group package registers its implementation when {@link LeaseGroup} loads.
 */
public final class GroupInternals {

  /** The group package's side. */
  public interface Access {
    void runPass(LeaseGroup group);

    void fault(LeaseGroup.Builder builder, String fault);
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
   * Runs one pass of {@code group} on the calling thread (a group whose passes the caller drives
   * never calls {@code start()}).
   *
   * @throws dev.lease.core.LeaseException if the database could not be reached
   * @throws IllegalStateException if the group or its manager is closed
   */
  public static void runPass(LeaseGroup group) {
    access().runPass(group);
  }

  /**
   * Builds a deliberately broken group: {@code fault} is the name of one of the group's test faults
   * ({@code IGNORE_SHARE}, {@code RELEASE_BEFORE_CALLBACK}, {@code CLAIM_WITHOUT_ROW_LOCK}, {@code
   * FIRST_PASS_IN_ONE_TRANSACTION}, {@code MOVE_BY_RELEASE}). Never in production.
   */
  public static LeaseGroup.Builder faultForTesting(LeaseGroup.Builder builder, String fault) {
    access().fault(builder, fault);
    return builder;
  }
}
