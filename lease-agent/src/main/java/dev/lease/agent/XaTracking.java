package dev.lease.agent;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedConnection;
import java.lang.ref.WeakReference;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
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
 *   <li>The reset at {@code end} would forget a branch poisoned by a loss: the lease the branch's
 *       statements ran under is kept by Xid, and {@code prepare} (or a one-phase {@code commit}) of
 *       a branch whose lease is not held rolls it back and fails with {@code XA_RBROLLBACK}.
 * </ul>
 *
 * Public for the instrumented code only; not an API.
 */
public final class XaTracking {

  private static final Logger log = LoggerFactory.getLogger(XaTracking.class);

  /** Per XAResource: is a branch active, and the fenced handles to reset. */
  private static final class Link {
    volatile boolean active;

    /** The lease the active branch's statements (the fence's verify first) ran under. */
    volatile Lease lease;

    final List<WeakReference<Connection>> fenced = new ArrayList<>();
  }

  private static final Map<Object, Link> LINKS = Collections.synchronizedMap(new WeakHashMap<>());

  /**
   * Ended branches (by Xid, whichever resource the transaction manager prepares or commits them on)
   * with the lease their statements ran under, until commit, rollback or forget. Bounded: the
   * oldest is dropped past {@link #MAX_BRANCHES} (a transaction manager that never finishes them).
   */
  private static final int MAX_BRANCHES = 10_000;

  private static final Map<XidKey, Lease> BRANCHES =
      Collections.synchronizedMap(
          new LinkedHashMap<>() {
            @Override
            protected boolean removeEldestEntry(Map.Entry<XidKey, Lease> eldest) {
              return size() > MAX_BRANCHES;
            }
          });

  /** Deliberately broken for the negative control: poisoned branches prepare and commit. */
  private static final boolean TESTING_NO_POISON =
      Instrumenter.TESTING_DISABLED.contains("xa-poison");

  /**
   * Deliberately broken for the negative control: MySQL/MariaDB branches under STRICT prepare,
   * releasing the verify's lock.
   */
  private static final boolean TESTING_PREPARE_UNCHECKED =
      Instrumenter.TESTING_DISABLED.contains("xa-strict-prepare");

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

  /** The handle {@code c} of {@code xa} as the fence should see it; then {@link #fenced}. */
  static Connection handle(XAConnection xa, Connection c) {
    XAResource resource;
    try {
      resource = xa.getXAResource();
    } catch (SQLException | RuntimeException e) {
      log.debug("{} gives no XAResource; its handle is fenced as a plain connection", xa, e);
      return c;
    }
    Link link = LINKS.computeIfAbsent(key(resource), r -> new Link());
    Class<?>[] interfaces = publicInterfaces(c.getClass());
    return (Connection)
        Proxy.newProxyInstance(
            c.getClass().getClassLoader() != null
                ? c.getClass().getClassLoader()
                : XaTracking.class.getClassLoader(),
            interfaces,
            new Handle(c, link, resource));
  }

  /** Registers the fenced connection made of a {@link #handle}, to reset it with its branch. */
  static void fenced(Connection handle, Connection fenced) {
    if (!Proxy.isProxyClass(handle.getClass())
        || !(Proxy.getInvocationHandler(handle) instanceof Handle)) {
      return;
    }
    Link link = ((Handle) Proxy.getInvocationHandler(handle)).link;
    synchronized (link) {
      link.fenced.removeIf(r -> r.get() == null);
      link.fenced.add(new WeakReference<>(fenced));
    }
  }

  /** Exit advice of {@code XAResource.start}: a branch is active on the resource's handles. */
  public static void started(Object resource) {
    // a handle may be taken before or after start: the link exists from whichever comes first
    Link link = LINKS.computeIfAbsent(key(resource), r -> new Link());
    reset(link);
    link.lease = null;
    link.active = true;
  }

  /**
   * Exit advice of {@code XAResource.end}: the branch's transaction is over for its handles (their
   * fences are reset); the lease its statements ran under is kept for {@link #beforePrepare}.
   */
  public static void ended(Object resource, Object xid) {
    Link link = LINKS.get(key(resource));
    if (link == null) {
      return;
    }
    Lease lease = link.lease;
    XidKey key = XidKey.of(xid);
    if (lease != null && key != null) {
      BRANCHES.put(key, lease);
    }
    link.active = false;
    reset(link);
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
   */
  public static void beforePrepare(Object resource, Object xid, boolean twoPhase)
      throws XAException {
    XidKey key = XidKey.of(xid);
    Lease lease = key == null ? null : BRANCHES.get(key);
    if (lease == null) {
      return;
    }
    String why;
    if (!lease.isHeld() && !TESTING_NO_POISON) {
      why =
          "XA branch "
              + xid
              + " ran under lease "
              + lease.name()
              + (lease.term() == 0 ? "" : " term " + lease.term())
              + " (instance "
              + lease.instance()
              + "), which this process "
              + (lease.term() == 0
                  ? "does not hold"
                  : "no longer holds ("
                      + lease.lossReason().map(Enum::name).orElse("released")
                      + ")")
              + ": rolled back instead of prepared or committed";
    } else if (twoPhase && strict && mySqlFamily(lease) && !TESTING_PREPARE_UNCHECKED) {
      why =
          "XA branch "
              + xid
              + " ran under lease "
              + lease.name()
              + " term "
              + lease.term()
              + " with fencing=strict on "
              + lease.manager().databaseProduct()
              + ": rolled back instead of prepared, because MySQL/MariaDB release the branch's"
              + " shared locks at XA PREPARE (MariaDB 10.6+), the lock on the lease row included,"
              + " so a prepared branch could be committed after a successor's claim; commit it in"
              + " one phase (XAResource.commit(xid, true), with the lock held), or use"
              + " fencing=verify (whose guarantee rests on timing) if two-phase commit is required";
    } else {
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

  private static boolean mySqlFamily(Lease lease) {
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

  /** The handle's view for the fence. */
  private static final class Handle implements InvocationHandler {
    private final Connection target;
    private final Link link;
    private final Object resource;

    Handle(Connection target, Link link, Object resource) {
      this.target = target;
      this.link = link;
      this.resource = resource;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      String name = method.getName();
      if (method.getDeclaringClass() == Object.class) {
        switch (name) {
          case "equals":
            return proxy == args[0];
          case "hashCode":
            return System.identityHashCode(proxy);
          default:
            return "XaHandle[" + target + "]";
        }
      }
      if (link.active) {
        if (link.lease == null) {
          // the lease the branch's statements run under (the fence's verify comes through here)
          link.lease = LeaseContext.current().orElse(null);
        }
        if (name.equals("getAutoCommit") && (args == null || args.length == 0)) {
          return false;
        }
        if (name.equals("commit") || name.equals("rollback")) {
          throw new SQLException(
              name
                  + " is not allowed on the connection of an active XA transaction ("
                  + resource
                  + "); the transaction manager ends it",
              "55000");
        }
      }
      try {
        return method.invoke(target, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
  }
}
