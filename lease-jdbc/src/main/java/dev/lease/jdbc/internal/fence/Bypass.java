package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.AutoCommitPolicy;
import dev.lease.jdbc.OutsideTransactionPolicy;
import dev.lease.jdbc.internal.fence.SessionView.Mode;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Calls that may reach the database past the wrapper's statements: {@code setSavepoint} and the
 * objects {@code unwrap} hands out (review S4). They run only after the transaction's verify, and a
 * driver object that would commit past the fence in autocommit mode is not handed out. Part of
 * {@link TransactionFence}.
 */
final class Bypass {

  private final FenceSteps f;
  private final AutoCommitStatements autoCommits;
  private final AbandonedTransactions abandonment;

  Bypass(FenceSteps f, AutoCommitStatements autoCommits, AbandonedTransactions abandonment) {
    this.f = f;
    this.autoCommits = autoCommits;
    this.abandonment = abandonment;
  }

  /**
   * Before a call that may reach the database outside the wrapper's statements ({@code
   * setSavepoint}, vendor {@code unwrap}): verifies now if a lease is bound and a transaction is
   * open.
   */
  void verifyIfInTransaction() throws SQLException {
    autoCommits.finishPending();
    Lease lease = LeaseInternals.currentOrNull();
    f.checkNotPoisoned();
    if (lease == null) {
      return;
    }
    if (f.state.verified() != null) {
      if (lease != f.state.verified()) {
        if (!abandonment.abandoned()) {
          throw f.losses.leaseChanged(lease);
        }
        abandonment.rollbackAbandoned(lease);
      } else {
        if (f.state.reverify) {
          f.verifier.verifyAgain(lease);
        }
        return;
      }
    }
    f.reader.lexer(lease);
    Mode mode = f.view.mode();
    if (mode != Mode.AUTOCOMMIT) {
      f.verifyIfNeeded(lease, mode);
    }
  }

  /**
   * Before one vendor call whose result is data ({@code PGConnection.getNotifications}, {@code
   * getBackendPID}): the call does its work now, through the driver, and hands out nothing that
   * reaches the database later, so it is checked as a statement is, not as a driver object handed
   * out (no retirement). Inside a transaction: after its verify. In autocommit mode under a lease:
   * after a verify of its own (refused with {@link AutoCommitPolicy#REFUSE}).
   */
  void beforeDataCall() throws SQLException {
    verifyIfInTransaction();
    Lease lease = LeaseInternals.currentOrNull();
    if (lease == null || !f.rules.checksUnwrap() || f.view.mode() != Mode.AUTOCOMMIT) {
      return;
    }
    if (f.options.autoCommit() == AutoCommitPolicy.REFUSE) {
      throw Losses.autoCommitRefused(lease);
    }
    try {
      f.verifier.verify(lease); // refuses a lease no longer held
    } finally {
      f.state.endTransaction();
    }
  }

  /**
   * Before {@code unwrap} hands out a driver object, whose calls bypass the wrapper (review S4).
   * Under a bound lease, inside a transaction: after its verify ({@link #verifyIfInTransaction});
   * on MySQL/MariaDB the transaction is then in doubt ({@link TransactionFence#inDoubt}): the
   * commit verifies again. In autocommit mode, where what the object runs commits on its own
   * (pgjdbc's COPY): never the driver's own {@code Connection} or {@code Statement} (every
   * statement through it would commit unfenced), and other vendor objects only after a verify run
   * as a statement of its own, as for statements that cannot run in a transaction (not atomic;
   * refused with {@link AutoCommitPolicy#REFUSE}), which refuses a lease no longer held.
   */
  void beforeUnwrap(Class<?> iface) throws SQLException {
    verifyIfInTransaction();
    Lease lease = LeaseInternals.currentOrNull();
    if (lease == null || !f.rules.checksUnwrap()) {
      return;
    }
    if (f.view.mode() != Mode.AUTOCOMMIT) {
      if (f.state.verified() != null && f.isMySql()) {
        // its commit() can end the verified transaction (and STRICT's lock) and its next
        // statement open another, which the driver's flag cannot tell apart (review: unwrap)
        f.inDoubt(Doubt.DRIVER_OBJECT);
      }
      FencedTransaction t = f.state.txn;
      if (t != null && f.rules.retiresConnectionsOfDriverObjects()) {
        DriverSession session = f.view.driverSession();
        if (session.driverConnection() == null || session.driver == DriverSession.Driver.SQLITE) {
          // a retired connection must be one the pool recognises as broken (SQLState 08xxx):
          // sqlite-jdbc's closed connection has no SQLState, so a pool would hand it out again
          throw Losses.outsideTransactionRefused(
              lease,
              "unwrap("
                  + iface.getSimpleName()
                  + "): "
                  + (session.driverConnection() == null
                      ? "the fence does not know this driver's connection"
                      : "on SQLite the fence cannot retire the driver's connection from the pool's"
                          + " reach")
                  + " when the transaction ends, and a handle kept past it would write unfenced;"
                  + " unwrap it with no lease bound (it is then not fenced)",
              false);
        }
        // every handle on the physical connection dies with the transaction (issue 35 item 3):
        // TransactionState.endTransaction marks it for retirement
      }
      if (t != null) {
        // handed out: its commit proves itself, on PostgreSQL too (Doubt.DRIVER_OBJECT)
        t.driverObjects = true;
      }
      return;
    }
    if (f.options.outsideTransaction() == OutsideTransactionPolicy.REFUSE
        && f.rules.retiresConnectionsOfDriverObjects()) {
      throw Losses.outsideTransactionRefused(
          lease,
          "unwrap("
              + iface.getSimpleName()
              + ") in autocommit mode hands out a driver object whose statements would each commit"
              + " on their own, outside any verified transaction; unwrap it inside a transaction"
              + " (setAutoCommit(false)): it is verified first, and usable until that transaction"
              + " ends, when the fence retires the physical connection",
          false);
    }
    if (Connection.class.isAssignableFrom(iface) || Statement.class.isAssignableFrom(iface)) {
      throw new SQLException(
          "refused to unwrap "
              + iface.getName()
              + " in autocommit mode under "
              + lease
              + ": it is the driver's own "
              + (Connection.class.isAssignableFrom(iface) ? "Connection" : "Statement")
              + ", whose statements would each commit past the fence; unwrap it inside a"
              + " transaction (setAutoCommit(false)) and use it only there, or unwrap a vendor"
              + " interface that is not a java.sql type (PGConnection, MysqlConnection)");
    }
    if (f.options.autoCommit() == AutoCommitPolicy.REFUSE) {
      throw Losses.autoCommitRefused(lease);
    }
    try {
      f.verifier.verify(lease); // refuses a lease no longer held
    } finally {
      f.state.endTransaction();
    }
  }
}
