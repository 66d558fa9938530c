package dev.lease.agent;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's own connections to the lease database: a small pool that keeps up to {@value
 * #KEEP_IDLE} physical connections open between lease statements and hands one to each statement (a
 * claim, a renewal, a release, a replica's poll), instead of a new physical connection each time
 * (on PostgreSQL a new server process each: one every renew interval on every replica).
 *
 * <p>What it never does: block (a statement that finds no idle connection opens one, and it is
 * closed afterwards if {@value #KEEP_IDLE} are idle already; lease-core bounds every statement by
 * its attempt timeout anyway), share a connection with the application (the connections are the
 * agent's, opened inside {@link ConnectionFencing#unfenced} so they are never fenced, and counted
 * against no pool of the application), or hand a session on with state a statement left in it:
 *
 * <ul>
 *   <li>a connection on which anything threw (a statement, a commit, a restore) is closed, not
 *       kept: it may be broken, or its session half put back (the next statement gets a new one);
 *   <li>a connection whose session properties set through JDBC (auto-commit, isolation, read-only,
 *       catalog, schema, holdability, network timeout, type map, client info) were not put back to
 *       their values before the first change is rolled back and closed; statements left open are
 *       closed;
 *   <li>a connection idle for longer than {@link #VALIDATE_AFTER_IDLE} is validated before it is
 *       handed out, and replaced if the server or a firewall ended it; one idle for longer than
 *       {@link #MAX_IDLE} or open for longer than {@link #MAX_LIFETIME} (a fail-over that moved the
 *       database's name) is closed instead.
 * </ul>
 *
 * lease-core itself puts back what its SQL sets in the session (time zone, lock waits, busy
 * timeout; PostgreSQL's are transaction-local), and any failure of that throws: such a connection
 * is closed by the first rule.
 */
final class LeaseConnectionPool implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaseConnectionPool.class);

  /** Physical connections kept open between statements: a renewal and a claim at once. */
  static final int KEEP_IDLE = 2;

  /**
   * A connection idle for longer is checked ({@link Connection#isValid}, one round trip) before it
   * is handed out: in steady state (renewals, a replica's polls, every renew interval) never; a
   * method called now and then, or a process that was paused, finds a connection the server or a
   * firewall ended replaced rather than failing its claim.
   */
  static final Duration VALIDATE_AFTER_IDLE = Duration.ofSeconds(5);

  static final Duration MAX_IDLE = Duration.ofSeconds(30);
  static final Duration MAX_LIFETIME = Duration.ofMinutes(30);

  /** The bound of one validation, seconds. */
  private static final int VALIDATION_TIMEOUT_SECONDS = 1;

  /** Opens a physical connection of the lease database. */
  @FunctionalInterface
  interface Opener {
    Connection open() throws SQLException;
  }

  /** Session properties a statement may set through JDBC, with the getter of their value. */
  private static final Map<String, String> SETTERS = new HashMap<>();

  /** The same, getter -> setter. */
  private static final Map<String, String> GETTERS = new HashMap<>();

  static {
    SETTERS.put("setAutoCommit", "getAutoCommit");
    SETTERS.put("setTransactionIsolation", "getTransactionIsolation");
    SETTERS.put("setReadOnly", "isReadOnly");
    SETTERS.put("setCatalog", "getCatalog");
    SETTERS.put("setSchema", "getSchema");
    SETTERS.put("setHoldability", "getHoldability");
    SETTERS.put("setNetworkTimeout", "getNetworkTimeout");
    // no getter compares them: a connection that had them set is never kept
    SETTERS.put("setTypeMap", null);
    SETTERS.put("setClientInfo", null);
    SETTERS.forEach(
        (setter, getter) -> {
          if (getter != null) {
            GETTERS.put(getter, setter);
          }
        });
  }

  private final Opener opener;
  private final int keepIdle;
  private final long validateAfterIdleNanos;
  private final long maxIdleNanos;
  private final long maxLifetimeNanos;
  private final boolean checkSessions;
  private final AtomicLong opened = new AtomicLong();
  private final AtomicLong discarded = new AtomicLong();

  /** Idle connections, the most recently returned first; guarded by this. */
  private final Deque<Physical> idle = new ArrayDeque<>();

  private boolean closed;

  LeaseConnectionPool(Opener opener) {
    this(
        opener,
        AgentRules.current().leaseConnectionsKeptIdle(KEEP_IDLE),
        VALIDATE_AFTER_IDLE,
        MAX_IDLE,
        MAX_LIFETIME,
        AgentRules.current().checksLeaseConnectionSessions());
  }

  /**
   * @param keepIdle 0: a new physical connection for every statement (the negative control)
   * @param validateAfterIdle a connection idle for longer is validated before it is handed out
   * @param checkSessions false: keep a connection whatever its session looks like (the negative
   *     control of the session checks)
   */
  LeaseConnectionPool(
      Opener opener,
      int keepIdle,
      Duration validateAfterIdle,
      Duration maxIdle,
      Duration maxLifetime,
      boolean checkSessions) {
    this.opener = Objects.requireNonNull(opener, "opener");
    this.keepIdle = keepIdle;
    this.validateAfterIdleNanos = validateAfterIdle.toNanos();
    this.maxIdleNanos = maxIdle.toNanos();
    this.maxLifetimeNanos = maxLifetime.toNanos();
    this.checkSessions = checkSessions;
  }

  /** A connection for one lease statement; closing it gives it back. */
  Connection getConnection() throws SQLException {
    for (Physical p; (p = takeIdle()) != null; ) {
      if (System.nanoTime() - p.returnedAt <= validateAfterIdleNanos || p.valid()) {
        return p.handOut();
      }
      discarded.incrementAndGet();
      p.closePhysical("it failed its validation after " + p.idleMillis() + " ms idle");
    }
    Physical p = new Physical(opener.open(), opened.incrementAndGet());
    log.debug("lease connection {} opened", p.id);
    return p.handOut();
  }

  /** Physical connections opened so far. */
  long opened() {
    return opened.get();
  }

  /** Physical connections closed so far instead of being kept (broken, changed, too old). */
  long discarded() {
    return discarded.get();
  }

  /** Idle connections now. */
  synchronized int idle() {
    return idle.size();
  }

  /** Closes the idle connections; connections in use are closed when they come back. */
  @Override
  public void close() {
    List<Physical> toClose;
    synchronized (this) {
      closed = true;
      toClose = new ArrayList<>(idle);
      idle.clear();
    }
    toClose.forEach(p -> p.closePhysical("the agent shuts down"));
  }

  private Physical takeIdle() {
    List<Physical> stale = new ArrayList<>();
    Physical found = null;
    long now = System.nanoTime();
    synchronized (this) {
      while (found == null && !idle.isEmpty()) {
        Physical p = idle.pollFirst();
        if (p.tooOld(now)) {
          stale.add(p);
        } else {
          found = p;
        }
      }
      // the least recently used ones age too
      for (Iterator<Physical> it = idle.descendingIterator(); it.hasNext(); ) {
        Physical p = it.next();
        if (!p.tooOld(now)) {
          break;
        }
        it.remove();
        stale.add(p);
      }
    }
    stale.forEach(p -> p.closePhysical("idle or open too long"));
    return found;
  }

  private void giveBack(Physical p, String trouble, boolean failed) {
    if (trouble == null) {
      synchronized (this) {
        if (!closed && idle.size() < keepIdle) {
          p.returnedAt = System.nanoTime();
          idle.addFirst(p);
          return;
        }
      }
      p.closePhysical(null);
      return;
    }
    discarded.incrementAndGet();
    p.closePhysical(trouble, !failed);
  }

  /** One physical connection and its session's state as the agent knows it. */
  private final class Physical {
    final Connection raw;
    final long id;
    final long openedAt = System.nanoTime();
    long returnedAt = openedAt;

    /**
     * The session's values as opened, by setter, learnt as they are first read (mostly by
     * lease-core, which reads each before it changes it): every use must leave them so.
     */
    final Map<String, Object> baseline = new HashMap<>();

    Physical(Connection raw, long id) {
      this.raw = raw;
      this.id = id;
    }

    boolean tooOld(long now) {
      return now - returnedAt > maxIdleNanos || now - openedAt > maxLifetimeNanos;
    }

    long idleMillis() {
      return (System.nanoTime() - returnedAt) / 1_000_000;
    }

    boolean valid() {
      try {
        return raw.isValid(VALIDATION_TIMEOUT_SECONDS);
      } catch (SQLException | RuntimeException e) {
        return false;
      }
    }

    Connection handOut() {
      Use use = new Use(this);
      use.handle =
          (Connection)
              Proxy.newProxyInstance(
                  LeaseConnectionPool.class.getClassLoader(),
                  new Class<?>[] {Connection.class},
                  new Tracked(use, raw, true));
      return use.handle;
    }

    void closePhysical(String why) {
      closePhysical(why, true);
    }

    /**
     * @param rollback false after a call failed: the connection may hang, and closing it ends the
     *     session (and its transaction) anyway
     */
    void closePhysical(String why, boolean rollback) {
      if (why != null) {
        log.debug("lease connection {} closed: {}", id, why);
      }
      try {
        if (rollback && !raw.isClosed() && !raw.getAutoCommit()) {
          raw.rollback(); // close() with a transaction open is up to the driver: roll it back
        }
      } catch (SQLException | RuntimeException e) {
        // closing it ends the session anyway
      }
      try {
        raw.close();
      } catch (SQLException | RuntimeException e) {
        log.debug("could not close lease connection {}: {}", id, e.toString());
      }
    }
  }

  /** One hand-out of a physical connection, from getConnection to close. */
  private final class Use {
    final Physical physical;
    Connection handle;
    volatile boolean closed;

    /** What went wrong on this use (a throw, a session left changed), or null. */
    String trouble;

    /** A call threw on this use. */
    boolean failed;

    /** Session properties changed through JDBC on this use: setter -> the last value set. */
    final Map<String, Object> last = new HashMap<>();

    final List<Statement> statements = new ArrayList<>();

    Use(Physical physical) {
      this.physical = physical;
    }

    synchronized void failed(Throwable t) {
      failed = true;
      if (trouble == null) {
        trouble = "a call failed: " + t;
      }
    }

    /** Before a session setter runs: remembers the value it changes. */
    synchronized void setting(String setter, Object[] args) throws SQLException {
      String getter = SETTERS.get(setter);
      if (getter == null) {
        if (trouble == null) {
          trouble = setter + " was called";
        }
        return;
      }
      if (!physical.baseline.containsKey(setter)) {
        physical.baseline.put(setter, get(getter));
      }
      // setNetworkTimeout(executor, ms): the value is the last argument
      last.put(setter, args[args.length - 1]);
    }

    /** After a getter returned: a value not changed yet is the session's value as opened. */
    synchronized void read(String getter, Object value) {
      String setter = GETTERS.get(getter);
      if (!last.containsKey(setter)) {
        physical.baseline.putIfAbsent(setter, value);
      }
    }

    private Object get(String getter) throws SQLException {
      try {
        return Connection.class.getMethod(getter).invoke(physical.raw);
      } catch (InvocationTargetException e) {
        if (e.getCause() instanceof SQLException s) {
          throw s;
        }
        throw new SQLException("could not read " + getter, e.getCause());
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException(e);
      }
    }

    /** close() of the handle: checks the session and gives the connection back (or closes it). */
    void end() {
      String why;
      boolean threw;
      synchronized (this) {
        if (closed) {
          return;
        }
        closed = true;
        for (Statement s : statements) {
          try {
            s.close();
          } catch (SQLException | RuntimeException e) {
            failed(e);
          }
        }
        why = trouble;
        threw = failed;
        if (why == null) {
          for (Map.Entry<String, Object> changed : last.entrySet()) {
            Object was = physical.baseline.get(changed.getKey());
            if (!Objects.equals(was, changed.getValue())) {
              why =
                  changed.getKey()
                      + " left the session changed ("
                      + was
                      + " -> "
                      + changed.getValue()
                      + ")";
              break;
            }
          }
        }
      }
      try {
        if (why == null && physical.raw.isClosed()) {
          why = "the driver closed it";
        }
      } catch (SQLException | RuntimeException e) {
        why = "isClosed failed: " + e;
      }
      giveBack(physical, checkSessions ? why : null, threw);
    }
  }

  /**
   * A JDBC object of one use (the connection handle, its statements, their result sets): forwards
   * every call to the driver's object and records what concerns the session.
   */
  private final class Tracked implements InvocationHandler {
    private final Use use;
    private final Object target;
    private final boolean connection;

    Tracked(Use use, Object target, boolean connection) {
      this.use = use;
      this.target = target;
      this.connection = connection;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      String name = method.getName();
      int n = args == null ? 0 : args.length;
      switch (name) {
        case "equals":
          if (n == 1) {
            return proxy == args[0];
          }
          break;
        case "hashCode":
          if (n == 0) {
            return System.identityHashCode(proxy);
          }
          break;
        case "toString":
          if (n == 0) {
            return (connection ? "lease connection " : "statement of lease connection ")
                + use.physical.id;
          }
          break;
        case "close":
          if (connection && n == 0) {
            use.end();
            return null;
          }
          break;
        case "isClosed":
          if (connection && n == 0 && use.closed) {
            return true;
          }
          break;
        case "getConnection":
          if (!connection && n == 0) {
            return use.handle; // a statement's back-pointer: the handle, never the raw connection
          }
          break;
        default:
          break;
      }
      if (connection && use.closed && !name.equals("isClosed")) {
        throw new SQLException("lease connection " + use.physical.id + " is closed", "08003");
      }
      if (connection && SETTERS.containsKey(name)) {
        use.setting(name, args);
      }
      Object result;
      try {
        result = method.invoke(target, args);
      } catch (InvocationTargetException e) {
        Throwable cause = e.getCause();
        // SQLite has no network timeout: lease-core asks, and goes on without one
        if (!(cause instanceof SQLFeatureNotSupportedException)) {
          use.failed(cause);
        }
        throw cause;
      }
      if (connection && n == 0 && GETTERS.containsKey(name)) {
        use.read(name, result);
      }
      Class<?> type = method.getReturnType();
      if (result instanceof Statement s && Statement.class.isAssignableFrom(type)) {
        Object wrapped = wrap(type, result);
        synchronized (use) {
          use.statements.add(s);
        }
        return wrapped;
      }
      if (result instanceof ResultSet && type == ResultSet.class) {
        return wrap(type, result);
      }
      return result;
    }

    private Object wrap(Class<?> type, Object result) {
      return Proxy.newProxyInstance(
          LeaseConnectionPool.class.getClassLoader(),
          new Class<?>[] {type},
          new Tracked(use, result, false));
    }
  }
}
