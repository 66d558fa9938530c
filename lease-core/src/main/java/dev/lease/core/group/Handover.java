package dev.lease.core.group;

import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.GroupRules;
import dev.lease.core.internal.LeaseInternals;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves a member's keys to the members that need them: the keys above the fair share (chosen by the
 * {@link ShedChoice}), or all of them when it drains, by transfer (see {@link #handOver}).
 */
final class Handover {

  private static final Logger log = LoggerFactory.getLogger(LeaseGroup.class);

  private final LeaseManager manager;
  private final String group;
  private final String member;
  private final GroupSql sql;
  private final GroupKeys keys;
  private final GroupEvents events;
  private final ShedChoice shedChoice;
  private final boolean shedOnePerPass;
  private final GroupRules rules;

  Handover(
      LeaseManager manager,
      String group,
      String member,
      GroupSql sql,
      GroupKeys keys,
      GroupEvents events,
      ShedChoice shedChoice,
      boolean shedOnePerPass,
      GroupRules rules) {
    this.manager = manager;
    this.group = group;
    this.member = member;
    this.sql = sql;
    this.keys = keys;
    this.events = events;
    this.shedChoice = shedChoice;
    this.shedOnePerPass = shedOnePerPass;
    this.rules = rules;
  }

  /**
   * The keys to shed, {@code surplus} of them (one with {@code shedOneKeyPerPass}), chosen one
   * after another by the {@link ShedChoice} from the keys not chosen yet.
   */
  List<String> chooseShed(int surplus) {
    int count = shedOnePerPass ? 1 : surplus;
    TreeSet<String> left = keys.snapshot();
    List<String> chosen = new ArrayList<>();
    while (chosen.size() < count && !left.isEmpty()) {
      String k = null;
      try {
        k = shedChoice.choose(Collections.unmodifiableSortedSet(left));
      } catch (RuntimeException e) {
        log.warn("group {}: shed choice {} failed", group, shedChoice, e);
      }
      if (k == null || !left.contains(k)) {
        k = left.last();
      }
      left.remove(k);
      chosen.add(k);
    }
    return chosen;
  }

  /**
   * Moves {@code moving} (above the fair share, or all of them when draining) to the members that
   * need them, by transfer: the lease of each key goes to a named member's instance at term + 1 in
   * the same statement that fences this holder, so no third process can claim it in between, and
   * the receiver adopts it at its next pass (if it never does, the row expires after one lease
   * duration and is free as usual). Each {@link GroupCallbacks#onReleasing} returns first; then one
   * transfer statement per receiving member (per 1,000 keys). Keys no member is known to need (the
   * peers' counts were read before a concurrent move) are released instead, and claimed by whoever
   * is below its share.
   *
   * <p>Who gets what: every member that moves keys reads the same two things, the live members
   * (sorted by id) and how many candidate keys each instance holds, and lays out one plan from
   * them: the members above the fair share (or draining) in member order, each with its surplus,
   * against the members below it in member order, each with its deficit. This member transfers the
   * slice of the plan that starts after the surplus of the members before it, so members moving
   * keys at the same time fill the receivers' deficits one after another instead of all into the
   * first. A member whose instance another live member shares receives nothing (a transfer names an
   * instance).
   *
   * @return the keys transferred, each to the member it named
   */
  Map<String, String> handOver(
      List<String> moving,
      boolean shed,
      List<GroupSql.MemberRow> rows,
      SortedSet<String> candidates,
      int fairShare) {
    if (moving.isEmpty()) {
      return Map.of();
    }
    if (rows.isEmpty()) {
      keys.release(moving, shed);
      return Map.of();
    }
    return rules.move(
        () -> byTransfer(moving, shed, rows, candidates, fairShare),
        () -> {
          keys.release(moving, shed);
          return Map.of();
        });
  }

  /** {@link #handOver} by transfer (the rows of live members are known). */
  private Map<String, String> byTransfer(
      List<String> moving,
      boolean shed,
      List<GroupSql.MemberRow> rows,
      SortedSet<String> candidates,
      int fairShare) {
    Map<GroupSql.MemberRow, List<String>> plan = plan(moving, rows, candidates, fairShare);
    List<String> unplanned = new ArrayList<>(moving);
    for (List<String> ks : plan.values()) {
      unplanned.removeAll(ks);
    }
    keys.release(unplanned, shed);
    if (plan.isEmpty()) {
      return Map.of();
    }
    List<String> planned = new ArrayList<>(moving);
    planned.removeAll(unplanned);
    Map<String, String> moved = new LinkedHashMap<>();
    Map<GroupSql.MemberRow, List<Lease>> leases = new LinkedHashMap<>();
    for (Map.Entry<GroupSql.MemberRow, List<String>> e : plan.entrySet()) {
      List<Lease> ls = new ArrayList<>();
      for (String k : e.getValue()) {
        Lease l = keys.lease(k);
        if (l != null) {
          ls.add(l);
        }
      }
      leases.put(e.getKey(), ls);
    }
    rules.giveBack(
        () -> {
          for (String k : planned) {
            events.safely(() -> events.callbacks().onReleasing(k));
          }
          for (String k : planned) {
            keys.remove(k);
          }
        },
        () -> transfer(leases, moved));
    for (String k : planned) {
      log.debug(
          "group {}: {} key {}{}",
          group,
          shed ? "shed" : "released",
          k,
          moved.containsKey(k) ? " to member " + moved.get(k) : " (no longer ours)");
      events.left(k, shed);
    }
    return moved;
  }

  /** The transfer statements of {@link #handOver}: one per receiving member (per 1,000 keys). */
  private void transfer(Map<GroupSql.MemberRow, List<Lease>> leases, Map<String, String> moved) {
    Duration adoptWithin = manager.timings().leaseDuration();
    for (Map.Entry<GroupSql.MemberRow, List<Lease>> e : leases.entrySet()) {
      if (e.getValue().isEmpty()) {
        continue;
      }
      Map<String, Long> terms =
          LeaseInternals.transferAll(manager, e.getValue(), e.getKey().instance(), adoptWithin);
      for (String k : terms.keySet()) {
        moved.put(k, e.getKey().member());
      }
    }
  }

  /** The receiving member of each of {@code moving} this member moves; see {@link #handOver}. */
  private Map<GroupSql.MemberRow, List<String>> plan(
      List<String> moving,
      List<GroupSql.MemberRow> rows,
      SortedSet<String> candidates,
      int fairShare) {
    Map<String, Integer> perInstance = new HashMap<>();
    for (GroupSql.MemberRow r : rows) {
      perInstance.merge(r.instance(), 1, Integer::sum);
    }
    Map<String, Integer> counts = new HashMap<>();
    for (List<String> chunk : GroupKeys.chunks(new ArrayList<>(candidates))) {
      Map<String, Integer> some =
          LeaseInternals.execute(
              manager,
              "count the keys of group " + group + " per member",
              c -> sql.heldByInstance(c, chunk));
      some.forEach((i, n) -> counts.merge(i, n, Integer::sum));
    }
    long offset = 0;
    List<GroupSql.MemberRow> receivers = new ArrayList<>();
    List<Integer> deficits = new ArrayList<>();
    long totalDeficit = 0;
    for (GroupSql.MemberRow r : rows) {
      if (r.member().equals(member) || perInstance.get(r.instance()) != 1) {
        continue;
      }
      int has = counts.getOrDefault(r.instance(), 0);
      if (r.draining()) {
        if (r.member().compareTo(member) < 0) {
          offset += has;
        }
        continue;
      }
      if (has > fairShare) {
        if (r.member().compareTo(member) < 0) {
          offset += shedOnePerPass ? 1 : has - fairShare;
        }
      } else if (has < fairShare && !r.instance().equals(manager.instance())) {
        receivers.add(r);
        deficits.add(fairShare - has);
        totalDeficit += fairShare - has;
      }
    }
    Map<GroupSql.MemberRow, List<String>> plan = new LinkedHashMap<>();
    if (totalDeficit == 0) {
      return plan;
    }
    for (int i = 0; i < moving.size(); i++) {
      long slot = (offset + i) % totalDeficit;
      int r = 0;
      while (slot >= deficits.get(r)) {
        slot -= deficits.get(r);
        r++;
      }
      plan.computeIfAbsent(receivers.get(r), x -> new ArrayList<>()).add(moving.get(i));
    }
    return plan;
  }
}
