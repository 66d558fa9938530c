package legacy;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

/**
 * An {@code XAResource} of the shape lease-agent cannot link with the connection handles of its
 * branch: a top-level class (no {@code this$0} to its {@code XAConnection}), a new one from every
 * {@code getXAResource()}, running the XA statements on the physical connection. MariaDB
 * Connector/J 2.x's {@code MariaXaResource} is built so; this one runs against a real MySQL/MariaDB
 * server through whichever driver the URL names ({@link SqlXaDataSource}).
 */
final class SqlXaResource implements QuietXaResource {

  private final Connection physical;

  SqlXaResource(Connection physical) {
    this.physical = physical;
  }

  @Override
  public void start(Xid xid, int flags) throws XAException {
    try {
      // the handle must look like one open transaction to the fence (not autocommit): MariaDB
      // Connector/J 2.x's handle does the same inside XA START
      physical.setAutoCommit(false);
    } catch (SQLException e) {
      throw fail(e);
    }
    String suffix = flags == TMJOIN ? " JOIN" : flags == TMRESUME ? " RESUME" : "";
    run("XA START " + sql(xid) + suffix);
  }

  @Override
  public void end(Xid xid, int flags) throws XAException {
    run("XA END " + sql(xid) + (flags == TMSUSPEND ? " SUSPEND" : ""));
  }

  @Override
  public int prepare(Xid xid) throws XAException {
    run("XA PREPARE " + sql(xid));
    return XA_OK;
  }

  @Override
  public void commit(Xid xid, boolean onePhase) throws XAException {
    run("XA COMMIT " + sql(xid) + (onePhase ? " ONE PHASE" : ""));
    autocommit();
  }

  @Override
  public void rollback(Xid xid) throws XAException {
    run("XA ROLLBACK " + sql(xid));
    autocommit();
  }

  @Override
  public boolean isSameRM(XAResource other) {
    return other instanceof SqlXaResource && ((SqlXaResource) other).physical == physical;
  }

  private void autocommit() throws XAException {
    try {
      physical.setAutoCommit(true);
    } catch (SQLException e) {
      throw fail(e);
    }
  }

  private void run(String sql) throws XAException {
    try (Statement s = physical.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw fail(e);
    }
  }

  private static XAException fail(SQLException e) {
    XAException x = new XAException(e.getMessage());
    x.errorCode = XAException.XAER_RMERR;
    x.initCause(e);
    return x;
  }

  /** {@code X'gtrid',X'bqual',formatId}, as MySQL's XA statements take an Xid. */
  private static String sql(Xid xid) {
    return "X'"
        + hex(xid.getGlobalTransactionId())
        + "',X'"
        + hex(xid.getBranchQualifier())
        + "',"
        + xid.getFormatId();
  }

  private static String hex(byte[] bytes) {
    StringBuilder sb = new StringBuilder();
    for (byte b : bytes) {
      sb.append(String.format("%02x", b));
    }
    return sb.toString();
  }
}
