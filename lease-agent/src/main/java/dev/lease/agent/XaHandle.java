package dev.lease.agent;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * The fenced XA handle's view for the fence ({@link XaTracking}): while its resource's branch is
 * active it reports {@code getAutoCommit() == false} and refuses {@code commit}/{@code rollback},
 * records the leases the branch's statements run under, and marks or clears the handle of a
 * resource whose branches the agent cannot see.
 */
final class XaHandle implements InvocationHandler {
  private final Connection target;
  final XaTracking.Link link;
  private final Object resource;

  XaHandle(Connection target, XaTracking.Link link, Object resource) {
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
    Lease lease = LeaseContext.current().orElse(null);
    if (!link.active) {
      // a resource that shows the agent its branches has none here: nothing to mark or clear
      return link.seesItsBranches ? call(method, args) : unseen(method, args, name, lease);
    } else {
      if (lease != null) {
        // a lease the branch's statements run under (the fence's verify comes through here)
        link.ranUnder(lease);
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
    return call(method, args);
  }

  /**
   * A call on the handle of a resource whose branches the agent may not see, while it saw none
   * active. Every call under a MySQL/MariaDB lease marks the handle, whatever it is: the fence's
   * statements may run on driver statements made before the lease was bound (the verify carried in
   * a statement's own text), so the calls it makes around them (reading the session's state
   * included) are what the agent sees. A local end or close then clears the mark once the session
   * is in no branch; the fence's own calls after a transaction's end mark it again until the next
   * end or the handle's close.
   */
  private Object unseen(Method method, Object[] args, String name, Lease lease) throws Throwable {
    if (lease != null && XaTracking.mySqlFamily(lease)) {
      // if a branch runs on a resource the agent cannot link, beforePrepare must still know a
      // lease was in play
      XaTracking.mark(link, lease);
    }
    boolean ends = isEnd(name, args);
    if (ends && name.equals("close")) {
      XaTracking.clearIfOutsideXa(link, target);
    }
    Object result = call(method, args);
    if (ends && !name.equals("close")) {
      XaTracking.clearIfOutsideXa(link, target);
    }
    return result;
  }

  /**
   * A local transaction's end ({@code commit()}, {@code rollback()}, {@code setAutoCommit(true)})
   * or the handle's ({@code close()}): where a mark may be cleared.
   */
  private static boolean isEnd(String name, Object[] args) {
    if (args == null || args.length == 0) {
      return name.equals("commit") || name.equals("rollback") || name.equals("close");
    }
    return name.equals("setAutoCommit") && Boolean.TRUE.equals(args[0]);
  }

  private Object call(Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
