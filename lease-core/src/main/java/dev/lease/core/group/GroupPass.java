package dev.lease.core.group;

import dev.lease.core.Lease;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one pass did: for tests and for the listener. {@code moved}: the keys this pass transferred
 * (shed or, draining, released), each to the member it named.
 */
record GroupPass(
    int liveMembers,
    int share,
    int held,
    List<String> claimed,
    List<String> adopted,
    List<String> shed,
    List<String> released,
    Map<String, String> moved,
    List<String> lost) {

  private static final Logger log = LoggerFactory.getLogger(LeaseGroup.class);

  /** One INFO line for a pass that changed something; per-key lines are at DEBUG. */
  void log(String group, String member, String instance, GroupKeys keys) {
    GroupPass p = this;
    if (p.claimed().isEmpty()
        && p.adopted().isEmpty()
        && p.shed().isEmpty()
        && p.released().isEmpty()
        && p.lost().isEmpty()) {
      log.debug(
          "group {} member {}: pass: held {} of share {} among {} members",
          group,
          member,
          p.held(),
          p.share(),
          p.liveMembers());
      return;
    }
    log.info(
        "group {} member {} (instance {}): pass: claimed {}{}, adopted {}{}, shed {}, released {},"
            + " transferred {} to {} members, lost {}; held {} of share {} among {} members",
        group,
        member,
        instance,
        p.claimed().size(),
        termRange(keys, p.claimed()),
        p.adopted().size(),
        termRange(keys, p.adopted()),
        p.shed().size(),
        p.released().size(),
        p.moved().size(),
        new HashSet<>(p.moved().values()).size(),
        p.lost().size(),
        p.held(),
        p.share(),
        p.liveMembers());
  }

  /** " (terms a..b)" of the claimed keys' new leases, or nothing. */
  private static String termRange(GroupKeys keys, List<String> claimed) {
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (String k : claimed) {
      Lease l = keys.lease(k);
      if (l != null) {
        min = Math.min(min, l.term());
        max = Math.max(max, l.term());
      }
    }
    return min > max ? "" : " (terms " + min + ".." + max + ")";
  }
}
