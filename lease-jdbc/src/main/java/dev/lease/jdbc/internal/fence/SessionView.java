package dev.lease.jdbc.internal.fence;

import dev.lease.jdbc.internal.sql.SqlDialect;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the transaction is, asked of the driver rather than assumed ({@link DriverSession}): a
 * BEGIN sent as SQL before the lease was bound, {@code SET autocommit} as SQL, a deadlock that
 * rolled the transaction back. With a driver that cannot tell, only what is safe is assumed: no
 * transaction is open unless the fence saw one begin. Part of {@link TransactionFence}.
 */
final class SessionView {

  /** How the connection stands when a lease-bound transaction starts ({@link #mode}). */
  enum Mode {
    /** Autocommit: each statement commits on its own. */
    AUTOCOMMIT,
    /** {@code setAutoCommit(false)}: the driver keeps a transaction open. */
    JDBC,
    /** Autocommit on, but a transaction begun as SQL (BEGIN) is open. */
    SQL
  }

  private static final Logger log = LoggerFactory.getLogger(FenceContext.LOGGER);

  private final FenceContext f;

  /** The driver's view of the session; looked up when a lease-bound statement first needs it. */
  private DriverSession session;

  /** A statement failed before {@link #session} was looked up: its flags start out stale. */
  private boolean failedBeforeSession;

  SessionView(FenceContext f) {
    this.f = f;
  }

  /**
   * How the connection stands for a new lease-bound transaction, from the driver where it can tell:
   * a transaction begun as SQL before the lease was bound is found, and MySQL Connector/J's cached
   * autocommit is brought in line with the server first.
   */
  Mode mode() throws SQLException {
    DriverSession s = driverSession();
    if (s.isMySqlFamily()) {
      s.refresh(f.delegate); // after an error, the flags describe the session before it
      syncAutoCommit();
    }
    if (!f.delegate.getAutoCommit()) {
      return Mode.JDBC;
    }
    Boolean open = s.inTransaction();
    if (open == null) {
      open = f.state.sqlTransaction; // only a BEGIN the fence saw succeed, under a lease
    }
    return open ? Mode.SQL : Mode.AUTOCOMMIT;
  }

  /**
   * MySQL Connector/J keeps reporting the autocommit mode it last set itself; after {@code SET
   * autocommit} ran as SQL the server's flag says otherwise. The driver is told the server's mode
   * (it sends the same SET again, which changes nothing on the server), but only once the server
   * itself confirmed it: the cached flag is a hint, and acting on a wrong one loses writes.
   * Connector/J's {@code isValid()} (a pool's idle check: COM_PING) leaves its cached autocommit
   * flag false until the next statement; switching the driver to manual commit on that word turned
   * an application's autocommit writes into a transaction nobody committed (issue 35 item 4).
   */
  void syncAutoCommit() throws SQLException {
    DriverSession s = driverSession();
    Boolean server = s.serverAutoCommit();
    if (server == null || server == f.delegate.getAutoCommit()) {
      return;
    }
    Boolean confirmed = f.rules.confirmsCachedSessionState() ? serverAutoCommit() : server;
    if (confirmed != null && confirmed != f.delegate.getAutoCommit()) {
      log.debug("SET autocommit ran as SQL; telling the driver autocommit is {}", confirmed);
      f.delegate.setAutoCommit(confirmed);
    }
  }

  /**
   * The server's autocommit, asked ({@code SELECT @@session.autocommit}: starts no transaction).
   */
  private Boolean serverAutoCommit() throws SQLException {
    try (Statement st = f.delegate.createStatement();
        java.sql.ResultSet rs = st.executeQuery("SELECT @@session.autocommit")) {
      return rs.next() ? rs.getLong(1) != 0 : null;
    }
  }

  /**
   * SQLite: a COMMIT or ROLLBACK written as SQL, or an error that rolled back (ON CONFLICT
   * ROLLBACK, an interrupt), leaves sqlite-jdbc believing in a transaction SQLite no longer has;
   * statements would then commit one by one. A BEGIN puts one back (or fails: one is open).
   */
  void ensureSqliteTransaction() throws SQLException {
    if (f.lexer.dialect == SqlDialect.SQLITE) {
      restoreSqliteTransaction();
    }
  }

  /** A BEGIN puts back the transaction sqlite-jdbc believes in (or fails: one is open). */
  private void restoreSqliteTransaction() throws SQLException {
    if (!f.rules.asksDriverSession()) {
      return;
    }
    try (Statement s = f.delegate.createStatement()) {
      s.execute("BEGIN");
    } catch (SQLException e) {
      if (!String.valueOf(e.getMessage()).contains("within a transaction")) {
        throw e;
      }
    }
  }

  DriverSession driverSession() {
    DriverSession s = session;
    if (s == null) {
      s = f.rules.asksDriverSession() ? DriverSession.of(f.delegate) : DriverSession.UNKNOWN;
      if (failedBeforeSession) {
        s.failed();
      }
      session = s;
    }
    return s;
  }

  /** A statement that passed through failed: the driver's view of the session may be stale. */
  SQLException failed(SQLException e) {
    DriverSession s = session;
    if (s != null) {
      s.failed();
    } else {
      failedBeforeSession = true;
    }
    return e;
  }

  /**
   * A statement failed: the server may have rolled the transaction back (MySQL deadlock, lock wait
   * timeout with innodb_rollback_on_timeout, a reconnect; SQLite ON CONFLICT ROLLBACK) and with it
   * the verify's lock. Verify again before anything else runs in it.
   */
  void afterError() {
    driverSession().failed();
    f.state.doubt(Doubt.DRIVER_ERROR);
    DriverSession s = session;
    if (f.state.sqlTransaction && (s == null || !s.hasExactState())) {
      f.state.markSqlTransaction(false); // unknown now: assume none (the safe side)
    }
  }

  /** The physical connection was retired ({@link #retireIfDue}). */
  volatile boolean retired;

  /**
   * A transaction in which driver objects reaching the database were handed out has ended: the
   * driver's physical connection is closed before the call that ended it returns, so no handle on
   * it ({@code PGConnection}, a {@code CopyManager}, Connector/J's connection, a cast to {@code
   * java.sql.Connection}) writes after its transaction, when nothing fences it any more (issue 35
   * item 3). The pool replaces the connection (the fence makes the pool's proxy see it broken when
   * the application closes this one).
   */
  void retireIfDue() {
    if ((f.state.flags & TransactionState.RETIRE) == 0) {
      return;
    }
    f.state.flags &= ~TransactionState.RETIRE;
    Connection physical = driverSession().driverConnection();
    log.warn(
        "retired the physical connection {}: driver objects were handed out by unwrap in the"
            + " transaction that just ended, and none may reach the database after it; the pool"
            + " opens a new one",
        physical);
    retired = true;
    try {
      if (physical != null) {
        physical.close();
      }
    } catch (SQLException | RuntimeException e) {
      log.debug("closing the retired connection failed", e);
    }
  }
}
