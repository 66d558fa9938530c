package dev.lease.core.group;

import dev.lease.core.Database;
import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseNames;
import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.GroupInternals;
import dev.lease.core.internal.GroupPassTrigger;
import dev.lease.core.internal.GroupRules;
import dev.lease.core.internal.LeaseInternals;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shares a set of keys (partitions, tenants, devices, queues) fairly across the live processes that
 * run the same group: each key is owned by at most one process at a time, under an ordinary {@link
 * Lease} of the key's name with its own term (the key's fencing token), so {@code
 * LeaseContext.bind(group.lease(key).orElseThrow())} fences that key's transactions.
 *
 * <pre>{@code
 * LeaseGroup devices = LeaseGroup.builder(leases, "devices")
 *     .keys(() -> deviceIds())              // read every pass
 *     .callbacks(new GroupCallbacks() { ... })
 *     .build();
 * devices.start();
 * }</pre>
 *
 * <p>Every pass (every {@link Builder#passInterval}), in a bounded number of statements whatever
 * the number of keys (a member's first pass only announces it, so members that start together see
 * each other before they claim): reports keys whose lease was lost ({@link GroupCallbacks#onLost});
 * writes this member's heartbeat and draining flag to the members table and counts the live members
 * that are not draining (two statements, one transaction); releases keys that are no longer
 * candidates; adopts the keys a peer transferred to it; moves every key above the fair share {@code
 * ceil(keys / live members)} at once (or one per pass with {@link Builder#shedOneKeyPerPass()};
 * {@link ShedChoice} chooses) to the members below it, by transfer ({@link
 * GroupCallbacks#onReleasing} returns first for each, then one transfer statement per receiving
 * member per 1,000 keys, which fences this member as a claim would, so no third process can claim a
 * key before the receiver adopts it at its next pass); and claims free or expired keys up to the
 * fair share in one batched statement per 1,000 candidates. A member that joins or drains is thus
 * absorbed in one or two passes of its peers. The manager keeps the claimed leases renewed like
 * every lease it holds. Each pass that changed something logs one INFO line (per-key lines are at
 * DEBUG).
 *
 * <p>{@link #drain()} stops acquiring, tells the peers (they leave this member out of the share at
 * their next pass) and transfers every key to them at once. {@link #close()} does the same and
 * removes this member; {@link #closeOnShutdown()} installs it as a JVM shutdown hook.
 *
 * <p>Close order: close the group before its {@link LeaseManager}. If the manager closes first, it
 * stops the work bound to every key's lease and releases the rows itself (as it does for every
 * lease); the group then reports each key as lost at its next pass (or its close), stops, and
 * refuses {@link #start()} and {@link #drain()} with an {@link IllegalStateException}.
 */
public final class LeaseGroup implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaseGroup.class);

  static {
    // the property tests' simulations inject their pass trigger and weakened rules through it
    GroupInternals.register(new GroupAccess());
  }

  /** The members table's name is written into SQL, so only a plain identifier is accepted. */
  private static final Pattern TABLE =
      Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

  /**
   * Every this many passes, rows of members long gone are deleted and lease rows looked up again.
   */
  private static final int HOUSEKEEPING_PASSES = 64;

  private final LeaseManager manager;
  private final String group;
  private final String member;
  private final Supplier<? extends Collection<String>> candidateKeys;
  private final long passNanos;
  private final GroupRules rules;
  private final GroupPassTrigger trigger;

  /** The application's callbacks and listeners. */
  private final GroupEvents events;

  /** The keys this member holds, and the statements that take them and give them back. */
  private final GroupKeys keys;

  /** This member's row in the members table. */
  private final Membership membership;

  /** Moves keys above the fair share (or all, draining) to the members below it. */
  private final Handover handover;

  private final ReentrantLock passLock = new ReentrantLock();
  private final Condition wakeUp = passLock.newCondition();

  // guarded by passLock
  private long passes;
  private boolean announced;
  private boolean started;
  private Thread passer;
  private Thread shutdownHook;

  private volatile boolean draining;
  private volatile boolean closed;

  private LeaseGroup(Builder b, GroupSql sql) {
    this.manager = b.manager;
    this.group = b.group;
    this.member = LeaseInternals.mintHolder(manager);
    this.candidateKeys = b.keys;
    this.passNanos = b.passInterval.toNanos();
    this.rules = b.rules;
    this.trigger = b.trigger;
    this.events = new GroupEvents(group, b.callbacks, b.listeners);
    this.keys = new GroupKeys(manager, group, sql, events, rules);
    this.membership = new Membership(manager, group, member, sql, b.memberTimeout.toMillis());
    this.handover =
        new Handover(
            manager, group, member, sql, keys, events, b.shedChoice, b.shedOnePerPass, rules);
  }

  /**
   * A builder for the group {@code group} (the name shared by every process that runs it) on the
   * lease table of {@code manager}.
   */
  public static Builder builder(LeaseManager manager, String group) {
    return new Builder(manager, group);
  }

  /**
   * The statements that create the members table on {@code database} if it does not exist; for
   * migrations (or use {@link Builder#createTableIfMissing()}).
   *
   * @throws IllegalArgumentException if {@code membersTable} is not a plain SQL identifier
   */
  public static List<String> ddl(Database database, String membersTable) {
    return GroupSql.ddl(Objects.requireNonNull(database, "database"), table(membersTable));
  }

  /** The group's name. */
  public String name() {
    return group;
  }

  /** This member's id in the members table: random per group object, never reused. */
  public String member() {
    return member;
  }

  /** The keys this process holds now (a sorted snapshot). */
  public SortedSet<String> held() {
    return Collections.unmodifiableSortedSet(keys.snapshot());
  }

  /** The lease of {@code key} if this process holds it (bind it to fence the key's work). */
  public Optional<Lease> lease(String key) {
    return Optional.ofNullable(keys.lease(key)).filter(Lease::isHeld);
  }

  /** True once {@link #drain()} was called. */
  public boolean isDraining() {
    return draining;
  }

  /**
   * Starts the passes on a daemon thread of the group; the first runs at once.
   *
   * @throws IllegalStateException if already started, closed, or the manager is closed
   */
  public void start() {
    passLock.lock();
    try {
      ensureOpen("start");
      if (started) {
        throw new IllegalStateException(this + " is already started");
      }
      started = true;
      if (trigger != null) {
        trigger.start(this::runPass, passNanos);
        return;
      }
      Thread t = new Thread(this::passLoop, "lease-group-" + group + "-" + manager.instance());
      t.setDaemon(true);
      passer = t;
      t.start();
    } finally {
      passLock.unlock();
    }
  }

  /**
   * Stops acquiring and hands everything over: marks this member draining in the members table
   * (peers leave it out of the fair share from their next pass on), then transfers every key it
   * holds to the peers that need them at once (each {@link GroupCallbacks#onReleasing} first; they
   * adopt them at their next pass; keys no peer is known to need are released). Returns when the
   * keys were handed over. The group keeps its heartbeat (and takes nothing) until closed.
   * Idempotent.
   *
   * @throws IllegalStateException if the group or its manager is closed
   */
  public void drain() {
    passLock.lock();
    try {
      ensureOpen("drain");
      draining = true;
      try {
        runPass();
      } catch (LeaseException e) {
        // the peers may not see the flag yet; give the keys back anyway (they take them up to
        // their share, and the rest once they see the flag)
        log.warn("group {}: could not mark {} draining: {}", group, member, e.getMessage());
        keys.release(keys.list(), false);
      }
    } finally {
      passLock.unlock();
    }
  }

  /**
   * Stops the passes, stops the work of every key and releases all keys at once (each {@link
   * GroupCallbacks#onReleasing} first, then the releases together, after the work bound to the
   * leases ended or the grace period passed), and deletes this member from the members table so the
   * peers count it out at once. Does not close the {@link LeaseManager} (close it after the group).
   * Idempotent.
   */
  @Override
  public void close() {
    Thread t;
    passLock.lock();
    try {
      if (closed && passer == null && shutdownHook == null && keys.isEmpty()) {
        return;
      }
      closed = true;
      wakeUp.signalAll();
      t = passer;
      passer = null;
      if (LeaseInternals.isClosed(manager)) {
        keys.lostWithTheManager();
      } else if (!keys.isEmpty() || announced) {
        announced = false;
        keys.release(keys.list(), false);
        membership.remove();
      }
      removeShutdownHook();
    } finally {
      passLock.unlock();
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(passNanos / 1_000_000 + 2 * manager.timings().attemptTimeout().toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Installs a JVM shutdown hook that closes this group (hands every key over at once); removed
   * again by {@link #close()}. To close the manager on shutdown too, close it in the same hook
   * after the group instead: {@code group.close(); manager.close();}.
   *
   * @return the hook's thread
   */
  public Thread closeOnShutdown() {
    passLock.lock();
    try {
      ensureOpen("install a shutdown hook");
      if (shutdownHook == null) {
        shutdownHook = new Thread(this::close, "lease-group-shutdown-" + group);
        Runtime.getRuntime().addShutdownHook(shutdownHook);
      }
      return shutdownHook;
    } finally {
      passLock.unlock();
    }
  }

  @Override
  public String toString() {
    return "LeaseGroup[" + group + ", member " + member + ", instance " + manager.instance() + "]";
  }

  // ---- the pass -------------------------------------------------------------------------------

  private void passLoop() {
    while (!closed) {
      try {
        runPass();
      } catch (LeaseException e) {
        log.warn(
            "group {}: pass failed, retrying in {} ms: {}",
            group,
            passNanos / 1_000_000,
            e.getMessage());
        events.notify(l -> l.passFailed(group, e));
      } catch (IllegalStateException e) {
        if (closed || LeaseInternals.isClosed(manager)) {
          return;
        }
        log.error("group {}: pass failed", group, e);
      } catch (RuntimeException e) {
        log.error("group {}: pass failed", group, e);
      }
      passLock.lock();
      try {
        long left = passNanos;
        while (!closed && left > 0) {
          left = wakeUp.awaitNanos(left);
        }
      } catch (InterruptedException e) {
        // this is the group's own thread: an interrupt asks it to stop passing
        log.warn("group {}: its pass thread was interrupted; passes stop", group);
        return;
      } finally {
        passLock.unlock();
      }
    }
  }

  /**
   * One pass (the pass thread runs it every pass interval; tests call it directly).
   *
   * @throws LeaseException if the heartbeat or a claim could not reach the database
   * @throws IllegalStateException if the group or its manager is closed
   */
  GroupPass runPass() {
    passLock.lock();
    try {
      ensureOpen("run a pass");
      List<String> lost = keys.reportLosses();
      SortedSet<String> candidates = candidates();
      boolean leaving = draining;
      // not in the first pass: members that start together would purge at the same moment
      boolean housekeeping = passes > 0 && passes % HOUSEKEEPING_PASSES == 0;
      // a new member only announces itself in its first pass: members that start together then
      // see each other before anyone claims, instead of the first one taking every key
      boolean firstPass = !announced;
      passes++;
      int live;
      List<GroupSql.MemberRow> rows;
      if (firstPass) {
        Membership.FirstPass steps = membership.firstPass(leaving);
        live = rules.firstPass(steps);
        rows = steps.rows();
      } else {
        rows = membership.heartbeat(leaving);
        live = Membership.notDraining(rows);
      }
      announced = true;
      if (firstPass && !leaving) {
        // the lease rows too, while nobody claims: on MySQL/MariaDB an INSERT IGNORE that meets a
        // row a peer is inserting share-locks it until it commits, and a peer's claim in that
        // moment (SKIP LOCKED) steps over it; members starting together would then need a third
        // pass to take every key
        keys.createMissingRows(new ArrayList<>(candidates));
      }
      if (housekeeping) {
        membership.forgetTheLongGone();
        keys.forgetKnownRows(); // a row deleted by hand is created again
      }
      int members = Math.max(1, live);
      int fairShare = (candidates.size() + members - 1) / members;
      int share = leaving ? 0 : rules.share(fairShare, candidates.size());
      keys.releaseOrphans();
      List<String> released = new ArrayList<>();
      for (String k : keys.list()) {
        if (!candidates.contains(k)) {
          released.add(k);
        }
      }
      keys.release(released, false);
      // keys a peer transferred to this member, before it claims: peers transfer only to a member
      // below its share (by the counts they read), so a member at its share does not look (a key
      // transferred to it anyway expires after the adoption bound and is claimed as usual)
      List<String> adopted =
          !firstPass && !leaving && keys.size() < share ? keys.adopt(candidates) : List.of();
      List<String> shed = List.of();
      Map<String, String> moved = Map.of();
      if (leaving && !keys.isEmpty()) {
        List<String> all = keys.list();
        released.addAll(all);
        moved = handover.handOver(all, false, rows, candidates, fairShare);
      } else if (keys.size() > share) {
        shed = handover.chooseShed(keys.size() - share);
        moved = handover.handOver(shed, true, rows, candidates, fairShare);
      }
      List<String> claimed =
          !firstPass && keys.size() < share
              ? keys.claim(candidates, share - keys.size())
              : List.of();
      int n = keys.size();
      events.notify(l -> l.passCompleted(group, n, share, live));
      GroupPass pass = new GroupPass(live, share, n, claimed, adopted, shed, released, moved, lost);
      pass.log(group, member, manager.instance(), keys);
      return pass;
    } finally {
      passLock.unlock();
    }
  }

  private SortedSet<String> candidates() {
    Collection<String> supplied = candidateKeys.get();
    SortedSet<String> valid = new TreeSet<>();
    if (supplied == null) {
      return valid;
    }
    for (String k : supplied) {
      Optional<String> problem = LeaseNames.problem(k);
      if (problem.isPresent()) {
        log.warn("group {}: key skipped: {}", group, problem.get());
      } else {
        valid.add(k);
      }
    }
    return valid;
  }

  // ---- closing --------------------------------------------------------------------------------

  private void ensureOpen(String what) {
    if (LeaseInternals.isClosed(manager)) {
      closed = true;
      keys.lostWithTheManager();
      throw new IllegalStateException(
          manager
              + " is closed: cannot "
              + what
              + " of "
              + this
              + "; close the group before its LeaseManager");
    }
    if (closed) {
      throw new IllegalStateException(this + " is closed: cannot " + what + "; build a new group");
    }
  }

  private void removeShutdownHook() {
    if (shutdownHook != null && Thread.currentThread() != shutdownHook) {
      try {
        Runtime.getRuntime().removeShutdownHook(shutdownHook);
      } catch (IllegalStateException e) {
        // the JVM is shutting down already
      }
    }
    shutdownHook = null;
  }

  private static String table(String table) {
    if (table == null || !TABLE.matcher(table).matches()) {
      throw new IllegalArgumentException(
          "members table name "
              + (table == null ? "null" : "'" + table + "'")
              + " is not a plain SQL identifier: use letters, digits and '_' (at most 63, not"
              + " starting with a digit), optionally qualified by a schema as schema.table");
    }
    return table;
  }

  /** Configures a {@link LeaseGroup}. */
  public static final class Builder {
    private final LeaseManager manager;
    private final String group;
    private Supplier<? extends Collection<String>> keys;
    private GroupCallbacks callbacks =
        new GroupCallbacks() {
          @Override
          public void onAcquired(String key, Lease lease) {}

          @Override
          public void onReleasing(String key) {}

          @Override
          public void onLost(String key) {}
        };
    private ShedChoice shedChoice = SortedSet::last;
    private final List<GroupListener> listeners = new ArrayList<>();
    private Duration passInterval;
    private Duration memberTimeout;
    private String membersTable;
    private boolean createTable;
    private boolean shedOnePerPass;
    private GroupRules rules = GroupRules.PRODUCTION;
    private GroupPassTrigger trigger;

    private Builder(LeaseManager manager, String group) {
      this.manager = Objects.requireNonNull(manager, "manager");
      LeaseNames.validate(group);
      this.group = group;
    }

    /**
     * The keys this process may own, read at every pass (required). Keys that are not valid lease
     * names are skipped and logged; a key that disappears is released at the next pass.
     */
    public Builder keys(Supplier<? extends Collection<String>> candidates) {
      this.keys = Objects.requireNonNull(candidates, "keys");
      return this;
    }

    /** What the application does when it gets, must give back, or lost a key. */
    public Builder callbacks(GroupCallbacks callbacks) {
      this.callbacks = Objects.requireNonNull(callbacks, "callbacks");
      return this;
    }

    /**
     * Which keys to shed above the fair share, asked once per key shed (from the keys not chosen
     * yet); default the last in order.
     */
    public Builder shedChoice(ShedChoice choice) {
      this.shedChoice = Objects.requireNonNull(choice, "shedChoice");
      return this;
    }

    /**
     * Cautious moves: a member above its fair share gives back one key per pass instead of its
     * whole surplus at once, so a join moves keys one by one (about {@code ceil(K/M) -
     * ceil(K/(M+1))} passes) and each key's work restarts elsewhere before the next one moves.
     * Drains, closes and keys that are no longer candidates are still released at once.
     */
    public Builder shedOneKeyPerPass() {
      this.shedOnePerPass = true;
      return this;
    }

    public Builder listener(GroupListener listener) {
      listeners.add(Objects.requireNonNull(listener, "listener"));
      return this;
    }

    /**
     * How often a pass runs; default the manager's renew interval. Keep it well below the member
     * timeout.
     */
    public Builder passInterval(Duration interval) {
      Objects.requireNonNull(interval, "passInterval");
      if (interval.toMillis() < 1) {
        throw new IllegalArgumentException("passInterval must be at least 1 ms, got " + interval);
      }
      this.passInterval = interval;
      return this;
    }

    /**
     * How long after its last heartbeat (database clock) a member no longer counts; default the
     * manager's lease duration, so a killed member leaves the share when its leases expire.
     */
    public Builder memberTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "memberTimeout");
      if (timeout.toMillis() < 1) {
        throw new IllegalArgumentException("memberTimeout must be at least 1 ms, got " + timeout);
      }
      this.memberTimeout = timeout;
      return this;
    }

    /** The members table; default the lease table's name + {@code _members}. */
    public Builder membersTable(String table) {
      this.membersTable = table(table);
      return this;
    }

    /** Creates the members table at build time if it does not exist. */
    public Builder createTableIfMissing() {
      this.createTable = true;
      return this;
    }

    /** Who runs the passes once started; null: the group's own thread. */
    Builder passTrigger(GroupPassTrigger trigger) {
      this.trigger = Objects.requireNonNull(trigger, "trigger");
      return this;
    }

    /**
     * The group's rules; weakened ones only through {@link GroupInternals#rulesForTesting} (a test
     * JVM), or the tests of this package.
     */
    Builder rules(GroupRules rules) {
      this.rules = Objects.requireNonNull(rules, "rules");
      return this;
    }

    /**
     * Checks the members table (creating it if asked).
     *
     * @throws IllegalArgumentException for a missing key supplier or bad timings
     * @throws LeaseException if the members table is missing or the database unreachable
     * @throws IllegalStateException if the manager is closed
     */
    public LeaseGroup build() {
      if (keys == null) {
        throw new IllegalArgumentException(
            "a LeaseGroup needs its candidate keys: set keys(() -> ...)");
      }
      if (LeaseInternals.isClosed(manager)) {
        throw new IllegalStateException(manager + " is closed; build the group on an open one");
      }
      if (passInterval == null) {
        passInterval = manager.timings().renewInterval();
      }
      if (memberTimeout == null) {
        memberTimeout = manager.timings().leaseDuration();
      }
      if (memberTimeout.compareTo(passInterval) <= 0) {
        throw new IllegalArgumentException(
            "memberTimeout ("
                + memberTimeout.toMillis()
                + " ms) must be longer than passInterval ("
                + passInterval.toMillis()
                + " ms), or live members drop out of the share between their passes");
      }
      if (membersTable == null) {
        String t = manager.table() + "_members";
        if (!TABLE.matcher(t).matches()) {
          throw new IllegalArgumentException(
              "the default members table name " + t + " is too long; set membersTable(...)");
        }
        membersTable = t;
      }
      Dialect dialect = LeaseInternals.dialect(manager);
      GroupSql sql = new GroupSql(dialect, membersTable, rules);
      try {
        LeaseInternals.execute(
            manager,
            "check the members table " + membersTable,
            c -> {
              if (createTable) {
                try (Statement s = c.createStatement()) {
                  for (String ddl : sql.ddl()) {
                    s.execute(ddl);
                  }
                }
              }
              try (Statement s = c.createStatement()) {
                s.executeQuery(
                        "SELECT group_name, member, instance, heartbeat_ms, draining FROM "
                            + membersTable
                            + " WHERE 1 = 0")
                    .close();
              }
              return null;
            });
      } catch (LeaseException e) {
        if (e.getCause() instanceof SQLException s && dialect.isMissingTable(s)) {
          throw new LeaseException(
              "members table "
                  + membersTable
                  + " does not exist; create it with LeaseGroup.ddl(...) in your migrations or"
                  + " call createTableIfMissing() on the group's builder",
              e);
        }
        throw e;
      }
      return new LeaseGroup(this, sql);
    }
  }
}
