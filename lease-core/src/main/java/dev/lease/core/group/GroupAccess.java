package dev.lease.core.group;

import dev.lease.core.internal.GroupInternals;

/** The one implementation of {@link GroupInternals.Access}; registered by {@link LeaseGroup}. */
final class GroupAccess implements GroupInternals.Access {

  @Override
  public void runPass(LeaseGroup group) {
    group.runPass();
  }

  @Override
  public void fault(LeaseGroup.Builder builder, String fault) {
    builder.faultForTesting(LeaseGroup.Fault.valueOf(fault));
  }
}
