package dev.lease.core.group;

import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.GroupRules;
import dev.lease.core.internal.LeaseInternals;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keys one member holds, each under its own {@link Lease}, and the batched statements that take
 * them (claim, adoption of a transfer) and give them back (release). Every statement covers at most
 * {@link GroupSql#MAX_KEYS_PER_STATEMENT} keys. Called under the group's pass lock, except the
 * reads ({@link #lease}, {@link #snapshot}), which any thread may make.
 */
final class GroupKeys {

  private static final Logger log = LoggerFactory.getLogger(LeaseGroup.class);

  private final LeaseManager manager;
  private final String group;
  private final GroupSql sql;
  private final GroupEvents events;
  private final GroupRules rules;

  private final ConcurrentSkipListMap<String, Lease> held = new ConcurrentSkipListMap<>();

  // guarded by the group's pass lock
  private final Set<String> rowsKnown = new HashSet<>();

  /** Claim batches whose attempt failed on this side: holder token → keys; given back next pass. */
  private final Map<String, List<String>> orphans = new LinkedHashMap<>();

  GroupKeys(
      LeaseManager manager, String group, GroupSql sql, GroupEvents events, GroupRules rules) {
    this.manager = manager;
    this.group = group;
    this.sql = sql;
    this.events = events;
    this.rules = rules;
  }

  /** The lease of {@code key} if this member holds it (possibly lost since the last pass). */
  Lease lease(String key) {
    return held.get(key);
  }

  boolean holds(String key) {
    return held.containsKey(key);
  }

  int size() {
    return held.size();
  }

  boolean isEmpty() {
    return held.isEmpty();
  }

  /** The held keys in order, as a list this member may change while it iterates. */
  List<String> list() {
    return new ArrayList<>(held.keySet());
  }

  /**
   * A sorted copy of the held keys. Not {@code new TreeSet<>(held.keySet())}: that constructor
   * trusts a sorted set's size while it iterates, which fails while a pass changes the map.
   */
  TreeSet<String> snapshot() {
    return new TreeSet<>(new ArrayList<>(held.keySet()));
  }

  /** Forgets {@code key} (it left by a transfer: the manager's lease is fenced already). */
  void remove(String key) {
    held.remove(key);
  }

  /** Keys whose lease ended without the group releasing it: lost, or released by the manager. */
  List<String> reportLosses() {
    List<String> lost = new ArrayList<>();
    for (Map.Entry<String, Lease> e : held.entrySet()) {
      if (!e.getValue().isHeld() && held.remove(e.getKey(), e.getValue())) {
        lost.add(e.getKey());
      }
    }
    for (String k : lost) {
      log.warn("group {}: lost key {} (instance {})", group, k, manager.instance());
      events.lost(k);
    }
    return lost;
  }

  /** The manager closed first: it released every key's lease; report them lost, once. */
  void lostWithTheManager() {
    if (!held.isEmpty()) {
      log.warn(
          "group {}: its LeaseManager was closed before the group; {} keys were released by the"
              + " manager (close the group first)",
          group,
          held.size());
    }
    List<String> gone = new ArrayList<>(held.keySet());
    held.clear();
    for (String k : gone) {
      events.lost(k);
    }
  }

  /** The statement of one batch: takes up to {@code limit} of {@code chunk} for {@code holder}. */
  private interface Batch {
    Map<String, Long> run(Connection c, List<String> chunk, int limit, String holder)
        throws SQLException;
  }

  /** The manager's lease of one key a batch took (claimed or adopted) at {@code term}. */
  private interface Taken {
    Lease lease(String key, String holder, long term, long startNanos);
  }

  /** Claims up to {@code want} free or expired candidates this process does not hold. */
  List<String> claim(SortedSet<String> candidates, int want) {
    List<String> free = notHeld(candidates);
    createMissingRows(free);
    long leaseMs = manager.timings().leaseDuration().toMillis();
    return take(
        free,
        want,
        limit -> "claim up to " + limit + " keys of group " + group,
        (c, chunk, limit, holder) ->
            sql.claim(c, chunk, limit, holder, manager.instance(), leaseMs),
        (k, holder, term, start) ->
            LeaseInternals.adoptBatchClaim(manager, k, holder, term, start));
  }

  /**
   * Adopts the candidates a peer transferred to this member's instance (one statement per 1,000
   * candidates, and one read when it adopted any); each is announced like a claim ({@link
   * GroupCallbacks#onAcquired}, {@link GroupListener#claimed}).
   */
  List<String> adopt(SortedSet<String> candidates) {
    long leaseMs = manager.timings().leaseDuration().toMillis();
    return take(
        notHeld(candidates),
        Integer.MAX_VALUE,
        limit -> "adopt the keys of group " + group + " transferred to " + manager.instance(),
        (c, chunk, limit, holder) -> sql.adopt(c, chunk, manager.instance(), holder, leaseMs),
        (k, holder, term, start) ->
            LeaseInternals.adoptBatchTransfer(manager, k, holder, term, start));
  }

  private List<String> notHeld(SortedSet<String> candidates) {
    List<String> free = new ArrayList<>();
    for (String k : candidates) {
      if (!held.containsKey(k)) {
        free.add(k);
      }
    }
    return free;
  }

  /**
   * One batch statement per chunk of {@code free} until {@code want} keys are taken, each batch
   * under a holder token of its own; every key taken is held under its own lease and announced
   * ({@link GroupCallbacks#onAcquired}, {@link GroupListener#claimed}).
   */
  private List<String> take(
      List<String> free,
      int want,
      java.util.function.IntFunction<String> what,
      Batch batch,
      Taken taken) {
    List<String> took = new ArrayList<>();
    for (List<String> chunk : chunks(free)) {
      int limit = want - took.size();
      if (limit <= 0) {
        break;
      }
      String holder = LeaseInternals.mintHolder(manager);
      // the local deadlines count from before the statement is sent: the database's expiry is later
      long start = LeaseInternals.clock(manager).nanoTime();
      Map<String, Long> got;
      try {
        got =
            LeaseInternals.execute(
                manager, what.apply(limit), c -> batch.run(c, chunk, limit, holder));
      } catch (LeaseException e) {
        // timed out here, it may still commit in the database: nobody would hold those keys, so
        // the next pass gives back whatever this batch's holder token took
        orphans.put(holder, List.copyOf(chunk));
        throw e;
      }
      for (Map.Entry<String, Long> e : got.entrySet()) {
        String k = e.getKey();
        Lease lease;
        try {
          lease = taken.lease(k, holder, e.getValue(), start).hold();
        } catch (IllegalStateException closedMeanwhile) {
          // the manager closed: it released this key; the rest of the batch expires
          log.warn(
              "group {}: its LeaseManager closed while this member took keys: {}",
              group,
              closedMeanwhile.getMessage());
          throw closedMeanwhile;
        }
        held.put(k, lease);
        took.add(k);
        events.safely(() -> events.callbacks().onAcquired(k, lease));
        events.notify(l -> l.claimed(group, k, lease));
      }
    }
    return took;
  }

  /**
   * Gives {@code keys} back in the order of every release: the callbacks first (the application
   * stops the keys' work), then the manager's release of all their leases together (interrupts work
   * bound to them, waits up to the grace period, releases the rows).
   */
  void release(List<String> keys, boolean shed) {
    if (keys.isEmpty()) {
      return;
    }
    List<Lease> leases = new ArrayList<>();
    for (String k : keys) {
      Lease l = held.get(k);
      if (l != null) {
        leases.add(l);
      }
    }
    rules.giveBack(
        () -> {
          for (String k : keys) {
            events.safely(() -> events.callbacks().onReleasing(k));
          }
          for (String k : keys) {
            held.remove(k);
          }
        },
        () -> LeaseInternals.release(manager, leases));
    for (String k : keys) {
      log.debug("group {}: {} key {}", group, shed ? "shed" : "released", k);
      events.left(k, shed);
    }
  }

  /** Gives back the keys of batches that failed on this side (see {@link #take}). */
  void releaseOrphans() {
    for (var it = orphans.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<String, List<String>> e = it.next();
      int n =
          LeaseInternals.execute(
              manager,
              "give back the claims of a failed batch of group " + group,
              c -> sql.releaseBatch(c, e.getValue(), e.getKey()));
      if (n > 0) {
        log.warn("group {}: gave back {} keys claimed by a batch that timed out here", group, n);
      }
      it.remove();
    }
  }

  /** Creates the lease rows of {@code keys} not known to exist, one statement per 1,000 keys. */
  void createMissingRows(List<String> keys) {
    List<String> unknown = new ArrayList<>();
    for (String k : keys) {
      if (!rowsKnown.contains(k)) {
        unknown.add(k);
      }
    }
    for (List<String> chunk : chunks(unknown)) {
      LeaseInternals.execute(
          manager,
          "create the lease rows of " + chunk.size() + " keys of group " + group,
          c -> {
            Set<String> missing = new TreeSet<>(chunk);
            missing.removeAll(sql.existing(c, chunk));
            if (!missing.isEmpty()) {
              sql.createRows(c, new ArrayList<>(missing));
            }
            return null;
          });
      rowsKnown.addAll(chunk);
    }
  }

  /** Forgets which lease rows exist (housekeeping: a row deleted by hand is created again). */
  void forgetKnownRows() {
    rowsKnown.clear();
  }

  static List<List<String>> chunks(List<String> keys) {
    List<List<String>> chunks = new ArrayList<>();
    for (int i = 0; i < keys.size(); i += GroupSql.MAX_KEYS_PER_STATEMENT) {
      chunks.add(keys.subList(i, Math.min(keys.size(), i + GroupSql.MAX_KEYS_PER_STATEMENT)));
    }
    return chunks;
  }
}
