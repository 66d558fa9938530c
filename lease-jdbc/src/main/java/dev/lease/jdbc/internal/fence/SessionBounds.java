package dev.lease.jdbc.internal.fence;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * STRICT's session bounds on MySQL/MariaDB ({@code innodb_lock_wait_timeout} and MariaDB's {@code
 * idle_transaction_timeout}) live in the physical connection's session, which a pool hands to
 * borrowers with and without a lease alike. So:
 *
 * <ul>
 *   <li>the strict verify reads the session's current values in its own select list (no extra round
 *       trip) and the bounds are set only when they differ: on a new session, and again after a
 *       pool's session reset dropped them;
 *   <li>the values the session had before are remembered per physical connection, and put back when
 *       the connection is next used by a statement with no lease bound, so a borrower without a
 *       lease never runs with the lease's bounds (an idle-transaction timeout of one lease duration
 *       would end its session).
 * </ul>
 *
 * A wrapper outside a pool lives for one borrow, so the physical connection (reached through the
 * pool's {@code unwrap(Connection.class)}) keys a weak map: no strong reference keeps a closed
 * connection alive (checklist 28).
 */
final class SessionBounds {

  /** Physical connection to the values its session had before the bounds were set. */
  private static final Map<Connection, long[]> ORIGINALS =
      Collections.synchronizedMap(new WeakHashMap<>());

  /**
   * Physical connection to the bounds ({@code [lock wait, idle]}, seconds) its session was last
   * seen or made to have by a strict verify, until a borrower without a lease puts the session's
   * own back: a verify carried along with the first statement ({@link Piggyback}) reads them only
   * after that statement ran, so it is carried only where they are in place already.
   */
  private static final Map<Connection, long[]> IN_PLACE =
      Collections.synchronizedMap(new WeakHashMap<>());

  /**
   * Set once bounds were ever applied in this class loader: until then new wrappers skip the check
   * entirely (PostgreSQL, SQLite and VERIFY users never pay for it).
   */
  private static volatile boolean used;

  private SessionBounds() {}

  static boolean used() {
    return used;
  }

  /** The bound in whole seconds, as lease-core's MySqlDialect.strictSessionBounds rounds it. */
  static long seconds(long millis) {
    return Math.max(1, (millis + 999) / 1000);
  }

  /**
   * After a strict verify read {@code current} ({@code [lock wait, idle timeout or -1]}): sets the
   * bounds with {@code statements} if the session's values differ from {@code lockWait}/{@code
   * idle} (seconds). Returns true if it set them.
   */
  static boolean afterVerify(
      Connection delegate, long[] current, long lockWait, long idle, List<String> statements)
      throws SQLException {
    boolean differ = current[0] != lockWait || (current[1] >= 0 && current[1] != idle);
    Connection physical = physical(delegate);
    if (!differ || statements.isEmpty()) {
      IN_PLACE.put(physical, new long[] {lockWait, idle});
      return false;
    }
    ORIGINALS.putIfAbsent(physical, current.clone()); // after a reset: still the session's own
    used = true;
    try (Statement s = delegate.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    }
    IN_PLACE.put(physical, new long[] {lockWait, idle});
    return true;
  }

  /**
   * Before a statement with no lease bound: if bounds were set on this physical connection, puts
   * the session's own values back.
   */
  static void restore(Connection delegate) throws SQLException {
    Connection physical = physical(delegate);
    long[] own = ORIGINALS.remove(physical);
    if (own == null) {
      return; // nothing was set here: what is in place stays
    }
    IN_PLACE.remove(physical);
    try (Statement s = delegate.createStatement()) {
      // the values are numbers the server itself returned, never user input
      s.execute(
          "SET SESSION innodb_lock_wait_timeout = "
              + own[0]
              + (own[1] >= 0 ? ", idle_transaction_timeout = " + own[1] : ""));
    }
  }

  /**
   * True if a strict verify on this physical connection last saw or set these bounds ({@code
   * lockWait}, {@code idle}: seconds) and no borrower without a lease has put the session's own
   * back since.
   */
  static boolean inPlace(Connection delegate, long lockWait, long idle) {
    long[] b = IN_PLACE.get(physical(delegate));
    return b != null && b[0] == lockWait && b[1] == idle;
  }

  private static Connection physical(Connection c) {
    try {
      Connection inner = c.unwrap(Connection.class);
      return inner != null ? inner : c;
    } catch (SQLException | RuntimeException e) {
      return c;
    }
  }
}
