package dev.lease.agent;

import java.sql.Connection;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the instrumented {@code DataSource.getConnection} and {@code Driver.connect} methods call:
 * the advice bodies only call these static methods, so this class must be visible from the
 * application's class loader (it is, while the agent jar is on the system class path; see the
 * README's class-loader limits). Public for the instrumented code only; not an API.
 *
 * <p>A per-thread depth counter makes only the outermost call of a nested chain wrap (a delegating
 * DataSource, then HikariCP, then HikariCP's DriverDataSource, then {@code Driver.connect}: one
 * wrap, at the top, as OTel's {@code CallDepth.forClass(DataSource.class)}). A second counter marks
 * a connection pool's own connection factory ({@code pool-internals}): connections made there are
 * the pool's physical connections and are never fenced, so the pool's validation, init and reset
 * statements never are either; the application's connection is fenced when it leaves the pool.
 */
public final class ConnectionFencing {

  private static final Logger log = LoggerFactory.getLogger(ConnectionFencing.class);

  /** [0]: nesting depth of getConnection/connect calls; [1]: depth of pool-internal scopes. */
  private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[2]);

  private static volatile UnaryOperator<Connection> fencer;

  /**
   * Deliberately broken: every nested call wraps, as if there were no depth counter. Only for the
   * negative control of the wrap-once test (WrapOnceIT), which must see the difference.
   */
  private static final boolean WRAP_EVERY_CALL =
      Boolean.getBoolean("lease.agent.testing.wrapEveryCall");

  private ConnectionFencing() {}

  /** Installs what wraps the application's connections; until then connections pass unchanged. */
  static void install(UnaryOperator<Connection> wrap) {
    fencer = wrap;
  }

  /** Enter advice of getConnection/connect: true when this call is the outermost to fence. */
  public static boolean enter() {
    int[] d = DEPTH.get();
    int depth = d[0]++;
    return d[1] == 0 && (depth == 0 || WRAP_EVERY_CALL);
  }

  /**
   * Exit advice of getConnection/connect, also when it threw ({@code c} is then null): the
   * outermost call's connection comes back fenced.
   */
  public static Connection exit(boolean outermost, Connection c) {
    DEPTH.get()[0]--;
    if (!outermost || c == null) {
      return c;
    }
    UnaryOperator<Connection> f = fencer;
    if (f == null) {
      return c;
    }
    try {
      Connection fenced = f.apply(c);
      if (log.isDebugEnabled()) {
        log.debug(
            "handing out {} for {}",
            fenced == c ? "an already fenced connection" : "a fenced connection",
            c.getClass().getName());
      }
      return fenced;
    } catch (Throwable t) {
      // Fail closed here, not in the advice (checklist 36): an unfenced connection handed to a
      // fenced
      // application is the one outcome this agent exists to prevent.
      log.error(
          "could not fence a connection of {}; handing out a connection that refuses every"
              + " statement",
          c.getClass().getName(),
          t);
      try {
        c.close();
      } catch (Throwable ignored) {
        // best effort
      }
      return RefusingConnection.create("lease-agent could not fence this connection: " + t);
    }
  }

  /** Enter advice of a pool's own connection factory: connections made inside are not fenced. */
  public static void enterPoolInternal() {
    DEPTH.get()[1]++;
  }

  /** Exit advice of a pool's own connection factory. */
  public static void exitPoolInternal() {
    DEPTH.get()[1]--;
  }

  /** Runs {@code work} with connections unfenced: the agent's own lease connections. */
  static <T, E extends Exception> T unfenced(ThrowingSupplier<T, E> work) throws E {
    enterPoolInternal();
    try {
      return work.get();
    } finally {
      exitPoolInternal();
    }
  }

  @FunctionalInterface
  interface ThrowingSupplier<T, E extends Exception> {
    T get() throws E;
  }
}
