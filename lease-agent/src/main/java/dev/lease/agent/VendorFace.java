package dev.lease.agent;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.LeaseLostSQLException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The face a fenced connection shows the application when the driver's (or pool's) connection
 * implements public interfaces of its vendor: {@code (PGConnection)
 * DriverManager.getConnection(..)} for LISTEN/NOTIFY or {@code CopyManager}, MySQL's {@code
 * JdbcConnection}, c3p0's {@code C3P0ProxyConnection}. A fenced connection cannot be both
 * lease-jdbc's wrapper and the driver's class, so the face is a proxy that implements the fenced
 * connection's interfaces and the delegate's public vendor interfaces:
 *
 * <ul>
 *   <li>{@code java.sql.Connection} methods go to the fenced connection (the fencing rules);
 *   <li>vendor methods are refused ({@code LeaseLostSQLException}) when the lease bound to the
 *       thread (or the process's) is not held, in autocommit mode too; then they go to the object
 *       {@code fenced.unwrap(vendorInterface)} returns: the same rule as {@code unwrap}, the open
 *       transaction is verified first (a refused or poisoned one fails the call), and SQL the
 *       vendor object runs later is past the fence;
 *   <li>{@code unwrap}/{@code isWrapperFor} answer the face itself for the interfaces it has;
 *       equality is identity.
 * </ul>
 *
 * What it cannot do: a cast to a driver class (sqlite's {@code SQLiteConnection}, pgjdbc's {@code
 * PgConnection}) still fails, and back-pointers ({@code Statement.getConnection()}) return the
 * fenced connection without the vendor interfaces; the README says what to use instead.
 */
final class VendorFace implements InvocationHandler {

  /** Per connection class: the vendor interfaces a face implements, empty when none is needed. */
  private static final ClassValue<Class<?>[]> INTERFACES =
      new ClassValue<>() {
        @Override
        protected Class<?>[] computeValue(Class<?> type) {
          return vendorInterfaces(type);
        }
      };

  /** Whether a vendor method's result type is data ({@link #isData}), by type. */
  private static final Map<Class<?>, Boolean> DATA = new ConcurrentHashMap<>();

  /**
   * Data: a primitive, {@code void}, a boxed primitive, a {@code String}, an array of data, or an
   * interface whose every method returns data and takes no argument that could carry a statement
   * (pgjdbc's {@code PGNotification}). Anything else (a {@code CopyManager}, a {@code Fastpath},
   * {@code Object}) may reach the database after the call.
   */
  static boolean isData(Class<?> type) {
    return isData(type, 0);
  }

  private static boolean isData(Class<?> type, int depth) {
    if (type.isPrimitive()
        || type == String.class
        || type == Boolean.class
        || type == Character.class
        || (Number.class.isAssignableFrom(type) && type.getName().startsWith("java.lang."))) {
      return true;
    }
    if (type.isArray()) {
      return isData(type.getComponentType(), depth);
    }
    if (!type.isInterface() || depth > 1 || type.getName().startsWith("java.")) {
      return false;
    }
    for (Method m : type.getMethods()) {
      if (m.getDeclaringClass() != Object.class && !isData(m.getReturnType(), depth + 1)) {
        return false;
      }
    }
    return true;
  }

  /** Vendor methods by the Connection method with the same signature, or themselves. */
  private static final Map<Method, Method> ROUTES = new ConcurrentHashMap<>();

  /** Whether faces are made, and which vendor calls they refuse. */
  private static final AgentRules RULES = AgentRules.current();

  private static final boolean FACES = RULES.facesVendorInterfaces();

  private final Connection fenced;

  private VendorFace(Connection fenced) {
    this.fenced = fenced;
  }

  /**
   * {@code fenced} as the application should see it: itself, or a face that also implements the
   * vendor interfaces of {@code original}.
   */
  static Connection of(Connection original, Connection fenced) {
    if (!FACES || original == fenced) {
      return fenced;
    }
    Class<?>[] vendor = INTERFACES.get(original.getClass());
    if (vendor.length == 0) {
      return fenced;
    }
    Set<Class<?>> set = new LinkedHashSet<>(List.of(fenced.getClass().getInterfaces()));
    set.addAll(List.of(vendor));
    Class<?>[] all = set.toArray(new Class<?>[0]);
    ClassLoader loader = loaderSeeing(all, original.getClass().getClassLoader());
    if (loader == null) {
      return fenced;
    }
    return (Connection) Proxy.newProxyInstance(loader, all, new VendorFace(fenced));
  }

  /** Public interfaces of {@code type} outside the JDK, as vendors publish them. */
  private static Class<?>[] vendorInterfaces(Class<?> type) {
    Set<Class<?>> found = new LinkedHashSet<>();
    for (Class<?> c = type; c != null; c = c.getSuperclass()) {
      collect(c.getInterfaces(), found);
    }
    List<Class<?>> vendor = new ArrayList<>();
    for (Class<?> i : found) {
      String n = i.getName();
      if (Modifier.isPublic(i.getModifiers())
          && !n.startsWith("java.")
          && !n.startsWith("javax.")
          && !n.startsWith("jdk.")
          && !n.startsWith("dev.lease.")) {
        vendor.add(i);
      }
    }
    return vendor.toArray(new Class<?>[0]);
  }

  private static void collect(Class<?>[] interfaces, Set<Class<?>> into) {
    for (Class<?> i : interfaces) {
      if (into.add(i)) {
        collect(i.getInterfaces(), into);
      }
    }
  }

  /** A loader from which every interface resolves to the same class, or null. */
  private static ClassLoader loaderSeeing(Class<?>[] interfaces, ClassLoader preferred) {
    for (ClassLoader l :
        new ClassLoader[] {
          preferred, VendorFace.class.getClassLoader(), interfaces[0].getClassLoader()
        }) {
      if (l != null && seesAll(l, interfaces)) {
        return l;
      }
    }
    return null;
  }

  private static boolean seesAll(ClassLoader loader, Class<?>[] interfaces) {
    for (Class<?> i : interfaces) {
      try {
        if (Class.forName(i.getName(), false, loader) != i) {
          return false;
        }
      } catch (ClassNotFoundException | LinkageError e) {
        return false;
      }
    }
    return true;
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    Class<?> declaring = method.getDeclaringClass();
    if (declaring == Object.class) {
      switch (method.getName()) {
        case "equals":
          return proxy == args[0];
        case "hashCode":
          return System.identityHashCode(proxy);
        default:
          return "VendorFace[" + fenced + "]";
      }
    }
    String name = method.getName();
    if ((name.equals("unwrap") || name.equals("isWrapperFor"))
        && args != null
        && args.length == 1
        && args[0] instanceof Class
        && args[0] != dev.lease.jdbc.FencedConnection.class
        && ((Class<?>) args[0]).isInstance(proxy)) {
      return name.equals("unwrap") ? proxy : Boolean.TRUE;
    }
    Method route = ROUTES.computeIfAbsent(method, VendorFace::route);
    try {
      if (route.getDeclaringClass().isInstance(fenced)) {
        return route.invoke(fenced, args);
      }
      // a vendor method: refused at once when the bound lease is not held (in autocommit mode too,
      // where unwrap verifies nothing: COPY, large objects and the like would write unfenced),
      // then the unwrap rule (verify the open transaction), then the vendor object
      Object target;
      try {
        refuseIfNotHeld(declaring, name);
        refuseRawJdbc(method.getReturnType(), declaring, name);
        // a call that returns data does its work now and hands out nothing that reaches the
        // database later: checked as a statement; one that returns an object (a CopyManager)
        // follows the unwrap rule, and the connection is retired when the transaction ends
        target =
            DATA.computeIfAbsent(method.getReturnType(), VendorFace::isData)
                ? dev.lease.jdbc.internal.FenceInternals.vendorDataCall(fenced, declaring)
                : fenced.unwrap(declaring);
      } catch (SQLException e) {
        if (declares(method, SQLException.class)) {
          throw e;
        }
        // PGConnection.getBackendPID() and the like cannot throw it: unchecked, cause kept
        throw new IllegalStateException(e.toString(), e);
      }
      Object result = method.invoke(target, args);
      if (result instanceof java.sql.Statement) {
        // a method typed Object (c3p0's rawConnectionOperation) made one: not handed out
        try {
          ((java.sql.Statement) result).close();
        } finally {
          refuseRawJdbc(result.getClass(), declaring, name);
        }
      }
      if (result instanceof Connection || result instanceof java.sql.ResultSet) {
        refuseRawJdbc(result.getClass(), declaring, name);
      }
      return result;
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /**
   * A vendor method whose result is itself a JDBC connection, statement or result set (MySQL's
   * {@code clientPrepareStatement}, {@code getMultiHostSafeProxy}) would hand out the driver's own
   * object, whose statements bypass the fence: refused before the driver runs (after it, for a
   * method typed {@code Object}).
   */
  private static void refuseRawJdbc(Class<?> type, Class<?> vendor, String method)
      throws SQLException {
    if (!RULES.refusesVendorResult(type)) {
      return;
    }
    throw new SQLException(
        "vendor call "
            + vendor.getName()
            + "."
            + method
            + " refused: it gives the driver's own "
            + type.getName()
            + ", whose statements would run past the fence; use the fenced connection's JDBC"
            + " methods instead",
        "55000");
  }

  /** The lease bound to this thread (or the process's) is not held: the vendor call is refused. */
  private static void refuseIfNotHeld(Class<?> vendor, String method) throws SQLException {
    Lease lease = LeaseContext.current().orElse(null);
    if (!RULES.refusesVendorCallUnder(lease)) {
      return;
    }
    throw new LeaseLostSQLException(
        "vendor call "
            + vendor.getName()
            + "."
            + method
            + " refused before the driver ran it: lease "
            + lease.name()
            + (lease.term() == 0 ? "" : " term " + lease.term())
            + " (instance "
            + lease.instance()
            + "): "
            + (lease.term() == 0
                ? "this process does not hold it (another process holds it, or it has not been"
                    + " claimed yet)"
                : "it is no longer held by this process ("
                    + lease.lossReason().map(Enum::name).orElse("released")
                    + ")"),
        LeaseLostSQLException.REFUSED,
        lease,
        null);
  }

  private static boolean declares(Method m, Class<?> exception) {
    for (Class<?> e : m.getExceptionTypes()) {
      if (e.isAssignableFrom(exception)) {
        return true;
      }
    }
    return false;
  }

  /** The fenced connection's method of the same signature, or the vendor method itself. */
  private static Method route(Method m) {
    for (Class<?> own : new Class<?>[] {Connection.class, dev.lease.jdbc.FencedConnection.class}) {
      try {
        return own.getMethod(m.getName(), m.getParameterTypes());
      } catch (NoSuchMethodException e) {
        // not one of ours
      }
    }
    return m;
  }
}
