package dev.lease.core.group;

import dev.lease.core.internal.GroupInternals;
import dev.lease.core.internal.GroupPassTrigger;
import dev.lease.core.internal.GroupRules;

/** The one implementation of {@link GroupInternals.Access}; registered by {@link LeaseGroup}. */
final class GroupAccess implements GroupInternals.Access {

  @Override
  public void passTrigger(LeaseGroup.Builder builder, GroupPassTrigger trigger) {
    builder.passTrigger(trigger);
  }

  @Override
  public void rules(LeaseGroup.Builder builder, GroupRules rules) {
    builder.rules(rules);
  }
}
