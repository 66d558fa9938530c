package dev.lease.agent;

import dev.lease.jdbc.FencedConnection;
import dev.lease.jdbc.FencedConnections;
import java.lang.ref.WeakReference;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import javax.sql.XAConnection;
import javax.transaction.xa.XAResource;
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
 * </ul>
 *
 * Public for the instrumented code only; not an API.
 */
public final class XaTracking {

  private static final Logger log = LoggerFactory.getLogger(XaTracking.class);

  /** Per XAResource: is a branch active, and the fenced handles to reset. */
  private static final class Link {
    volatile boolean active;
    final List<WeakReference<Connection>> fenced = new ArrayList<>();
  }

  private static final Map<Object, Link> LINKS = Collections.synchronizedMap(new WeakHashMap<>());

  private XaTracking() {}

  /** The handle {@code c} of {@code xa} as the fence should see it; then {@link #fenced}. */
  static Connection handle(XAConnection xa, Connection c) {
    XAResource resource;
    try {
      resource = xa.getXAResource();
    } catch (SQLException | RuntimeException e) {
      log.debug("{} gives no XAResource; its handle is fenced as a plain connection", xa, e);
      return c;
    }
    Link link = LINKS.computeIfAbsent(resource, r -> new Link());
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
    Link link = LINKS.computeIfAbsent(resource, r -> new Link());
    reset(link);
    link.active = true;
  }

  /**
   * Exit advice of {@code end}, {@code prepare}, {@code commit}, {@code rollback}, {@code forget}.
   */
  public static void ended(Object resource) {
    Link link = LINKS.get(resource);
    if (link != null) {
      link.active = false;
      reset(link);
    }
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
        FencedConnections.transactionEndedElsewhere(c.unwrap(FencedConnection.class));
      } catch (SQLException | RuntimeException e) {
        log.debug("could not reset the fence of an XA handle", e);
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
