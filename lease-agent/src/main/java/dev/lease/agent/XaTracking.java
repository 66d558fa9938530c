package dev.lease.agent;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedConnection;
import java.lang.ref.WeakReference;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import javax.sql.XAConnection;
import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fenced handle of an {@code XAConnection}: the application's statements on it run in the
 * global transaction its {@code XAResource} started, which the fence must treat as one open
 * transaction (verified at its first statement) and forget when the branch ends.
 *
 * <ul>
 *   <li>While the branch is active the handle reports {@code getAutoCommit() == false} to the
 *       fence: pgjdbc's handle reports {@code true} during an XA transaction (its physical
 *       connection is not in autocommit), and the fence would otherwise wrap each statement into a
 *       transaction of its own and commit it, which XA forbids.
 *   <li>{@code commit}/{@code rollback} on the handle while the branch is active fail here, never
 *       reaching the driver: the transaction manager ends the branch, not the handle (pgjdbc
 *       refuses them too; the fence's rollback at close must not end a branch).
 *   <li>{@code XAResource.start}, {@code end}, {@code prepare}, {@code commit}, {@code rollback}
 *       and {@code forget} (advised, {@link XaAdvice}) reset the fence of every handle of the
 *       resource, so the next global transaction verifies again.
 *   <li>The reset at {@code end} would forget a branch poisoned by a loss: the leases the branch's
 *       statements ran under are kept by Xid (every segment's, {@code TMJOIN}/{@code TMRESUME}
 *       included), and {@code prepare} (or a one-phase {@code commit}) of a branch whose lease is
 *       not held rolls it back and fails with {@code XA_RBROLLBACK}.
 *   <li>A branch the agent did not see end on a resource it links with its handles (a driver whose
 *       {@code XAResource} it does not recognise, such as MariaDB Connector/J 2.x's top-level
 *       {@code MariaXaResource}) is refused at a two-phase {@code prepare} under STRICT when it may
 *       be a MySQL/MariaDB branch that ran under a lease ({@link #beforePrepare}): fail closed. A
 *       handle of such a resource that ran statements under a MySQL/MariaDB lease outside a seen
 *       branch keeps the prepare refused until its session is shown to be in no branch ({@link
 *       #MARKS}).
 * </ul>
 *
 * Public for the instrumented code only; not an API.
 */
public final class XaTracking {

  private static final Logger log = LoggerFactory.getLogger(XaTracking.class);

  /** Per XAResource: is a branch active, and the fenced handles to reset. */
  static final class Link {
    volatile boolean active;

    /**
     * The agent sees every branch of this link's session start and end: its key is the {@code
     * XAConnection} (its own resource, or the owner of an inner one). A link keyed by a top-level
     * resource of its own (MariaDB Connector/J 2.x) is not: another resource object of the same
     * connection may run a branch the agent cannot attribute.
     */
    final boolean seesItsBranches;

    /**
     * The MySQL/MariaDB lease a statement on this link's handle ran under while no branch was seen
     * active, if the link does not see its branches: those statements may be in a branch on a
     * resource the agent cannot link ({@link #MARKS}).
     */
    volatile Lease mark;

    Link(boolean seesItsBranches) {
      this.seesItsBranches = seesItsBranches;
    }

    /** A handle was taken through this link: the branches of its resource are seen by the agent. */
    volatile boolean handles;

    /** The last lease added to {@link #leases}: the hot path's check, without the lock. */
    volatile Lease last;

    /**
     * The leases the active branch segment's statements (the fence's verify first) ran under,
     * usually one; a thread may bind another lease in the middle of a branch (guarded by this).
     */
    private final List<Lease> leases = new ArrayList<>(1);

    final List<WeakReference<Connection>> fenced = new ArrayList<>();

    void ranUnder(Lease lease) {
      if (lease == last) {
        return;
      }
      synchronized (this) {
        if (!containsIdentical(leases, lease)) {
          leases.add(lease);
        }
        last = lease;
      }
    }

    /** The segment's leases, forgotten here (the next segment starts empty). */
    synchronized List<Lease> takeLeases() {
      List<Lease> taken = List.copyOf(leases);
      leases.clear();
      last = null;
      return taken;
    }
  }

  private static final Map<Object, Link> LINKS = Collections.synchronizedMap(new WeakHashMap<>());

  /** The link of {@code resource}, made on first sight. */
  private static Link link(Object resource) {
    Object key = key(resource);
    return LINKS.computeIfAbsent(key, k -> new Link(k instanceof XAConnection || k != resource));
  }

  /**
   * Ended branches (by Xid, whichever resource the transaction manager prepares or commits them on)
   * with the leases their statements ran under (none: the agent saw the branch and no statement ran
   * under a lease), until commit, rollback or forget. A branch ended on a resource the agent cannot
   * link with its handles is not here unless its statements were seen. Bounded: the oldest is
   * dropped past {@link #MAX_BRANCHES} (a transaction manager that never finishes them), and its
   * leases go to {@link #DROPPED}.
   */
  static final int MAX_BRANCHES = 10_000;

  private static final Map<XidKey, List<Lease>> BRANCHES =
      Collections.synchronizedMap(
          new LinkedHashMap<>() {
            @Override
            protected boolean removeEldestEntry(Map.Entry<XidKey, List<Lease>> eldest) {
              if (size() <= MAX_BRANCHES) {
                return false;
              }
              synchronized (DROPPED) {
                for (Lease lease : eldest.getValue()) {
                  DROPPED.put(lease, Boolean.TRUE);
                }
              }
              return true;
            }
          });

  /**
   * The leases of branches dropped from {@link #BRANCHES}: a branch found there no more may be one
   * of them, so a branch not found is checked as if it had run under each (the most restrictive
   * reading). As many as the distinct leases (terms) of dropped branches, a handful in a process's
   * life.
   */
  private static final Map<Lease, Boolean> DROPPED = new IdentityHashMap<>();

  /** Which branches are poisoned, and which prepares under STRICT are refused. */
  private static volatile AgentRules rules = AgentRules.current();

  /** Replaces the rules ({@code null}: this JVM's) for a test of this package's control. */
  static void rulesForTesting(AgentRules weakened) {
    rules = weakened != null ? weakened : AgentRules.current();
  }

  /**
   * The marked links ({@link Link#mark}): handles that ran a statement under a MySQL/MariaDB lease
   * while the agent saw no branch active on their resource, which does not show the agent its
   * branches. Their statements may be in a branch started on a resource the agent cannot link with
   * them (MariaDB Connector/J 2.x), so {@link #beforePrepare} refuses a two-phase prepare of a
   * branch it did not see while any link is marked, even when no lease is bound at prepare (a
   * method's lease released before the transaction manager prepares).
   *
   * <p>A mark is cleared when the session is shown to be in no XA branch ({@link
   * #clearIfOutsideXa}: after the handle's local commit or rollback, and before its close, a {@code
   * ROLLBACK} the server refuses in a branch's ACTIVE, IDLE or PREPARED state); a successful {@code
   * commit()} alone proves nothing, since a driver that thinks it is in autocommit skips it. Only
   * MySQL-family leases mark: a PostgreSQL lease's statement must not replace a MariaDB mark.
   * Bounded: past {@link #MAX_MARKS} links (handles closed inside a branch, never shown outside
   * one) the oldest mark's lease goes to {@link #overflowMark}, which is never cleared (fail
   * closed).
   */
  static final int MAX_MARKS = 1_024;

  private static volatile Lease overflowMark;

  private static final Map<Link, Lease> MARKS =
      Collections.synchronizedMap(
          new LinkedHashMap<>() {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Link, Lease> eldest) {
              if (size() <= MAX_MARKS) {
                return false;
              }
              overflowMark = eldest.getValue();
              return true;
            }
          });

  /** The agent fences with STRICT (set once at start by {@link FencingAdapter}). */
  private static volatile boolean strict = true;

  static void fencing(boolean strictMode) {
    strict = strictMode;
  }

  /** An Xid's identity by value (transaction managers pass equal Xids, not always the same). */
  private record XidKey(int format, String gtrid, String bqual) {
    static XidKey of(Object xid) {
      if (!(xid instanceof Xid)) {
        return null;
      }
      Xid x = (Xid) xid;
      return new XidKey(
          x.getFormatId(),
          Base64.getEncoder().encodeToString(x.getGlobalTransactionId()),
          Base64.getEncoder().encodeToString(x.getBranchQualifier()));
    }
  }

  private XaTracking() {}

  /**
   * What a resource's handles are linked by: the {@code XAConnection} it belongs to. pgjdbc's and
   * Connector/J's XA connection is its own {@code XAResource}; MariaDB Connector/J returns a new
   * {@code XAResource} from every {@code getXAResource()} (an inner object of its pooled
   * connection), so the resource a transaction manager starts a branch on is another object than
   * the one a handle was linked with: its owner is the key.
   */
  private static Object key(Object resource) {
    if (resource instanceof XAConnection) {
      return resource;
    }
    Object owner = OWNER.get(resource.getClass()).apply(resource);
    return owner != null ? owner : resource;
  }

  /** A non-static inner XAResource's enclosing XAConnection ({@code this$0}), if it has one. */
  private static final ClassValue<java.util.function.Function<Object, Object>> OWNER =
      new ClassValue<>() {
        @Override
        protected java.util.function.Function<Object, Object> computeValue(Class<?> type) {
          for (Class<?> t = type; t != null; t = t.getSuperclass()) {
            try {
              java.lang.reflect.Field f = t.getDeclaredField("this$0");
              if (XAConnection.class.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                return r -> {
                  try {
                    return f.get(r);
                  } catch (IllegalAccessException e) {
                    return null;
                  }
                };
              }
            } catch (NoSuchFieldException | RuntimeException e) {
              // not an inner class of an XA connection (or not accessible): the resource itself
            }
          }
          return r -> null;
        }
      };

  /** Forgets every recorded and dropped branch and every mark (tests of this package only). */
  static void forgetForTesting() {
    BRANCHES.clear();
    synchronized (DROPPED) {
      DROPPED.clear();
    }
    MARKS.clear();
    overflowMark = null;
  }

  /** The handle {@code c} of {@code xa} as the fence should see it; then {@link #fenced}. */
  static Connection handle(XAConnection xa, Connection c) {
    XAResource resource;
    try {
      resource = xa.getXAResource();
    } catch (SQLException | RuntimeException e) {
      log.debug("{} gives no XAResource; its handle is fenced as a plain connection", xa, e);
      return c;
    }
    Link link = link(resource);
    link.handles = true;
    Class<?>[] interfaces = publicInterfaces(c.getClass());
    return (Connection)
        Proxy.newProxyInstance(
            c.getClass().getClassLoader() != null
                ? c.getClass().getClassLoader()
                : XaTracking.class.getClassLoader(),
            interfaces,
            new XaHandle(c, link, resource));
  }

  /** Registers the fenced connection made of a {@link #handle}, to reset it with its branch. */
  static void fenced(Connection handle, Connection fenced) {
    if (!Proxy.isProxyClass(handle.getClass())
        || !(Proxy.getInvocationHandler(handle) instanceof XaHandle)) {
      return;
    }
    Link link = ((XaHandle) Proxy.getInvocationHandler(handle)).link;
    synchronized (link) {
      link.fenced.removeIf(r -> r.get() == null);
      link.fenced.add(new WeakReference<>(fenced));
    }
  }

  /** Exit advice of {@code XAResource.start}: a branch is active on the resource's handles. */
  public static void started(Object resource) {
    // a handle may be taken before or after start: the link exists from whichever comes first
    Link link = link(resource);
    reset(link);
    link.takeLeases();
    link.active = true;
  }

  /**
   * Exit advice of {@code XAResource.end}: the branch's transaction is over for its handles (their
   * fences are reset); the leases its statements ran under are kept for {@link #beforePrepare},
   * added to those of the branch's earlier segments ({@code TMJOIN}, {@code TMRESUME}, another
   * resource of the same branch), never replacing them. A branch ended on a resource the agent
   * links with its handles is recorded even with no lease: seen, and unfenced.
   */
  public static void ended(Object resource, Object xid) {
    Link link = LINKS.get(key(resource));
    if (link == null) {
      return;
    }
    List<Lease> leases = link.takeLeases();
    XidKey key = XidKey.of(xid);
    if (key != null && (!leases.isEmpty() || linked(resource, link))) {
      BRANCHES.merge(key, leases, XaTracking::union);
    }
    link.active = false;
    reset(link);
  }

  /** Whether the agent links {@code resource} with the handles its branches' statements run on. */
  private static boolean linked(Object resource, Link link) {
    return resource instanceof XAConnection
        || OWNER.get(resource.getClass()).apply(resource) != null
        || link.handles;
  }

  private static List<Lease> union(List<Lease> a, List<Lease> b) {
    if (a.isEmpty()) {
      return b;
    }
    List<Lease> all = new ArrayList<>(a);
    for (Lease lease : b) {
      if (!containsIdentical(all, lease)) {
        all.add(lease);
      }
    }
    return List.copyOf(all);
  }

  private static boolean containsIdentical(List<Lease> leases, Lease lease) {
    for (Lease l : leases) {
      if (l == lease) {
        return true;
      }
    }
    return false;
  }

  /**
   * Exit advice of {@code prepare}, {@code commit}, {@code rollback} and {@code forget}: the branch
   * is finished (or prepared) and the resource's handles are reset.
   */
  public static void finished(Object resource, Object xid, boolean done) {
    if (done) {
      XidKey key = XidKey.of(xid);
      if (key != null) {
        BRANCHES.remove(key);
      }
    }
    Link link = LINKS.get(key(resource));
    if (link != null) {
      link.active = false;
      reset(link);
    }
  }

  /**
   * Enter advice of {@code XAResource.prepare}, and of {@code commit} with {@code onePhase} ({@code
   * twoPhase} false): a branch whose statements ran under a lease that is no longer held (lost,
   * released, or never held: a replica) must not commit. It is rolled back here, before the driver
   * prepares or commits it, and the transaction manager gets {@code XA_RBROLLBACK}, as from a
   * resource that rolled the branch back itself. A branch prepared while its lease was held is
   * committed as the transaction manager decides (under STRICT the verify's lock orders it before a
   * successor's claim).
   *
   * <p>MySQL/MariaDB under STRICT: {@code prepare} is refused the same way even while the lease is
   * held. MariaDB 10.6+ releases a transaction's shared locks at {@code XA PREPARE}, the verify's
   * lock on the lease row included, so a prepared branch no longer holds a successor's claim back
   * and its commit could come after it. A one-phase commit commits with the lock held and passes.
   * lease-jdbc refuses {@code XA PREPARE} written as SQL for the same reason.
   *
   * <p>A branch the agent has no record of (it ended on a resource the agent could not link with
   * its handles, or was dropped past {@link #MAX_BRANCHES}) fails closed: it is checked against the
   * leases of dropped branches, and under STRICT its two-phase {@code prepare} is refused when it
   * may be a MySQL/MariaDB branch that ran under a lease ({@link #unlinkedRefusal}).
   */
  public static void beforePrepare(Object resource, Object xid, boolean twoPhase)
      throws XAException {
    XidKey key = XidKey.of(xid);
    if (key == null) {
      return;
    }
    List<Lease> recorded = BRANCHES.get(key);
    List<Lease> leases = recorded != null ? recorded : dropped();
    String why = null;
    for (Lease lease : leases) {
      why = refusal(lease, xid, twoPhase, recorded == null);
      if (why != null) {
        break;
      }
    }
    if (why == null && recorded == null && twoPhase) {
      why = unlinkedRefusal(resource, xid);
    }
    if (why == null) {
      return;
    }
    log.warn("{}", why);
    try {
      ((XAResource) resource).rollback((Xid) xid);
    } catch (XAException | RuntimeException e) {
      log.warn("could not roll back the refused XA branch {}", xid, e);
    }
    BRANCHES.remove(key);
    XAException refused = new XAException(why);
    refused.errorCode = XAException.XA_RBROLLBACK;
    throw refused;
  }

  /** Why a branch that ran under {@code lease} must not prepare or commit, or null. */
  private static String refusal(Lease lease, Object xid, boolean twoPhase, boolean dropped) {
    String branch =
        "XA branch "
            + xid
            + (dropped
                ? " (not recorded: more than "
                    + MAX_BRANCHES
                    + " ended XA branches were unfinished, so it may be one dropped; checked"
                    + " against every lease of the dropped ones)"
                : "")
            + " ran under lease "
            + lease.name();
    if (rules.poisonsBranchOf(lease)) {
      return branch
          + (lease.term() == 0 ? "" : " term " + lease.term())
          + " (instance "
          + lease.instance()
          + "), which this process "
          + (lease.term() == 0
              ? "does not hold"
              : "no longer holds (" + lease.lossReason().map(Enum::name).orElse("released") + ")")
          + ": rolled back instead of prepared or committed";
    }
    if (twoPhase && strict && mySqlFamily(lease) && rules.refusesStrictMySqlPrepare()) {
      return branch
          + " term "
          + lease.term()
          + " with fencing=strict on "
          + lease.manager().databaseProduct()
          + ": rolled back instead of prepared, because MySQL/MariaDB release the branch's"
          + " shared locks at XA PREPARE (MariaDB 10.6+), the lock on the lease row included,"
          + " so a prepared branch could be committed after a successor's claim; commit it in"
          + " one phase (XAResource.commit(xid, true), with the lock held), or use"
          + " fencing=verify (whose guarantee rests on timing) if two-phase commit is required";
    }
    return null;
  }

  /**
   * Why a two-phase prepare of a branch the agent has no record of is refused, or null. The agent
   * cannot tell whether its statements ran under a lease: their handle is linked with another
   * resource object than the one the transaction manager prepares (MariaDB Connector/J 2.x's
   * top-level {@code MariaXaResource}, a new one per {@code getXAResource()}), or with none. Under
   * STRICT on MySQL/MariaDB a prepared branch keeps no lock on the lease row, so it is refused when
   * it may have run fenced statements: a lease is bound to the thread (or the process's leader
   * lease), or a fenced XA handle ran statements under one outside a branch the agent saw, and that
   * lease is on MySQL/MariaDB (the fence verifies on the database its statements run on), and the
   * resource is not another vendor's driver's. No signal says more: every such prepare is refused.
   */
  private static String unlinkedRefusal(Object resource, Object xid) {
    if (!strict || !rules.refusesUnlinkedStrictPrepare() || otherVendor(resource.getClass())) {
      return null;
    }
    // the thread's lease and the marks, each on its own: a PostgreSQL lease bound at prepare must
    // not hide a MariaDB lease an unlinked branch's statements ran under
    Lease lease =
        LeaseContext.current().filter(XaTracking::mySqlFamily).orElseGet(XaTracking::anyMark);
    if (lease == null) {
      return null;
    }
    return "XA branch "
        + xid
        + " on "
        + resource.getClass().getName()
        + ": lease-agent cannot link this XAResource with the connection handles its statements"
        + " ran on (a driver or wrapper whose XAResource it does not recognise), so it cannot"
        + " tell whether they ran under lease "
        + lease.name()
        + ", in play with fencing=strict on "
        + lease.manager().databaseProduct()
        + "; rolled back instead of prepared (fail closed), because MySQL/MariaDB release the"
        + " branch's shared locks at XA PREPARE, the lock on the lease row included, so a"
        + " prepared branch could be committed after a successor's claim; commit it in one phase"
        + " (XAResource.commit(xid, true)), or use fencing=verify, or report the driver and its"
        + " XAResource class to lease-agent so it can be linked";
  }

  /** A marked link's lease ({@link #MARKS}), or the overflow's, or null. */
  private static Lease anyMark() {
    synchronized (MARKS) {
      for (Lease lease : MARKS.values()) {
        return lease;
      }
    }
    return overflowMark;
  }

  /** Marks {@code link}: its handle ran a statement under {@code lease} outside a seen branch. */
  static void mark(Link link, Lease lease) {
    if (link.mark == lease) {
      return;
    }
    link.mark = lease;
    MARKS.put(link, lease);
  }

  /**
   * Clears {@code link}'s mark if its session ({@code target}, the driver's handle) is in no XA
   * branch: a {@code ROLLBACK} succeeds (MySQL and MariaDB refuse it in a branch's ACTIVE, IDLE and
   * PREPARED states with XAER_RMFAIL), so no statement the handle ran can be in a branch still to
   * prepare. Called after a local commit or rollback and before close, never inside a statement.
   */
  static void clearIfOutsideXa(Link link, Connection target) {
    if (link.mark == null) {
      return;
    }
    if (rules.probesSessionBeforeClearingXaMark()) {
      try (java.sql.Statement probe = target.createStatement()) {
        probe.execute("ROLLBACK");
      } catch (SQLException | RuntimeException e) {
        log.debug("{} may be in an XA branch; its mark stays", target, e);
        return;
      }
    }
    link.mark = null;
    MARKS.remove(link);
  }

  /** The leases of dropped branches ({@link #DROPPED}). */
  private static List<Lease> dropped() {
    synchronized (DROPPED) {
      return DROPPED.isEmpty() ? List.of() : List.copyOf(DROPPED.keySet());
    }
  }

  /**
   * Packages of drivers of other databases and of message brokers, whose XA resources the agent may
   * not link either (for example Oracle's top-level {@code OracleXAResource}) but which are not
   * MySQL/MariaDB branches.
   */
  private static final List<String> OTHER_VENDORS =
      List.of(
          "org.postgresql.",
          "com.impossibl.postgres.",
          "oracle.",
          "com.microsoft.sqlserver.",
          "net.sourceforge.jtds.",
          "com.ibm.db2.",
          "com.ibm.as400.",
          "com.sybase.",
          "org.h2.",
          "org.hsqldb.",
          "org.apache.derby.",
          "org.sqlite.",
          // message brokers' XA resources (a JMS branch beside a database branch)
          "org.apache.activemq.",
          "org.apache.qpid.",
          "com.ibm.mq.",
          "com.ibm.msg.client.",
          "org.hornetq.",
          "com.tibco.",
          "weblogic.jms.",
          "com.rabbitmq.");

  private static boolean otherVendor(Class<?> type) {
    for (Class<?> t = type; t != null; t = t.getSuperclass()) {
      for (String prefix : OTHER_VENDORS) {
        if (t.getName().startsWith(prefix)) {
          return true;
        }
      }
    }
    return false;
  }

  static boolean mySqlFamily(Lease lease) {
    String product = String.valueOf(lease.manager().databaseProduct());
    return product.contains("MySQL") || product.contains("MariaDB");
  }

  private static void reset(Link link) {
    List<Connection> handles = new ArrayList<>();
    synchronized (link) {
      for (WeakReference<Connection> r : link.fenced) {
        Connection c = r.get();
        if (c != null) {
          handles.add(c);
        }
      }
    }
    for (Connection c : handles) {
      try {
        dev.lease.jdbc.internal.FenceInternals.transactionEndedElsewhere(
            c.unwrap(FencedConnection.class));
      } catch (Throwable e) {
        // a fence that keeps the ended branch's state would let the next branch skip its verify:
        // the handle is closed instead (fail closed)
        log.error("could not reset the fence of an XA handle; closing it", e);
        try {
          c.close();
        } catch (Throwable ignored) {
          // best effort
        }
      }
    }
  }

  private static Class<?>[] publicInterfaces(Class<?> type) {
    List<Class<?>> all = new ArrayList<>();
    for (Class<?> t = type; t != null; t = t.getSuperclass()) {
      for (Class<?> i : t.getInterfaces()) {
        if (java.lang.reflect.Modifier.isPublic(i.getModifiers()) && !all.contains(i)) {
          all.add(i);
        }
      }
    }
    if (!all.contains(Connection.class)) {
      all.add(Connection.class);
    }
    return all.toArray(new Class<?>[0]);
  }
}
