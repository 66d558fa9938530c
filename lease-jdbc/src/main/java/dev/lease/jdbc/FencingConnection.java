package dev.lease.jdbc;

import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.concurrent.Executor;

/**
 * The fenced connection. Every statement, metadata object and result set it hands out is a wrapper
 * whose back-pointers lead back here, never to the driver's connection (checklist 1). Equality is
 * identity (checklist 4).
 */
final class FencingConnection extends ConnectionDelegate implements FencedConnection {

  final TransactionFence fence;
  private volatile boolean closed;

  FencingConnection(Connection delegate, FencingOptions options) {
    super(delegate);
    this.fence = new TransactionFence(delegate, options);
  }

  @Override
  Statement statement(Statement s) {
    return s == null ? null : new FencingStatement(this, s, null);
  }

  @Override
  PreparedStatement prepared(PreparedStatement s, String sql) {
    return s == null ? null : new FencingPreparedStatement(this, s, sql);
  }

  @Override
  CallableStatement callable(CallableStatement s, String sql) {
    return s == null ? null : new FencingCallableStatement(this, s, sql);
  }

  @Override
  public DatabaseMetaData getMetaData() throws SQLException {
    DatabaseMetaData md = delegate.getMetaData();
    return md == null ? null : new FencingDatabaseMetaData(this, md);
  }

  @Override
  public void setAutoCommit(boolean autoCommit) throws SQLException {
    fence.setAutoCommit(autoCommit);
  }

  @Override
  public boolean getAutoCommit() throws SQLException {
    return fence.getAutoCommit();
  }

  @Override
  public void setTransactionIsolation(int level) throws SQLException {
    fence.beforeSessionChange();
    delegate.setTransactionIsolation(level);
  }

  @Override
  public void setReadOnly(boolean readOnly) throws SQLException {
    fence.beforeSessionChange();
    delegate.setReadOnly(readOnly);
  }

  @Override
  public void commit() throws SQLException {
    fence.commit();
  }

  @Override
  public void rollback() throws SQLException {
    fence.rollback();
  }

  /**
   * A savepoint rollback stays in the transaction (checklist 10), but a savepoint set before the
   * verify takes the verify's lock with it on PostgreSQL: the next statement verifies again.
   */
  @Override
  public void rollback(Savepoint savepoint) throws SQLException {
    fence.beforeSessionChange();
    try {
      delegate.rollback(savepoint);
    } finally {
      fence.rolledBackToSavepoint();
    }
  }

  /**
   * Verifies first: pgjdbc sends SAVEPOINT (and the BEGIN before it) through its own internal
   * statement and MySQL Connector/J through a metadata-safe one, both bypassing this wrapper
   * (checklist 16).
   */
  @Override
  public Savepoint setSavepoint() throws SQLException {
    fence.verifyIfInTransaction();
    return delegate.setSavepoint();
  }

  @Override
  public Savepoint setSavepoint(String name) throws SQLException {
    fence.verifyIfInTransaction();
    return delegate.setSavepoint(name);
  }

  @Override
  public void close() throws SQLException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      fence.closing(); // rolls back a verified or poisoned transaction while the connection is open
    } finally {
      delegate.close();
    }
  }

  @Override
  public boolean isClosed() throws SQLException {
    return closed || delegate.isClosed();
  }

  @Override
  public void abort(Executor executor) throws SQLException {
    closed = true;
    try {
      delegate.abort(executor);
    } finally {
      fence.closed();
    }
  }

  @Override
  public void beginRequest() throws SQLException {
    delegate.beginRequest();
  }

  @Override
  public void endRequest() throws SQLException {
    try {
      delegate.endRequest();
    } finally {
      fence.endRequest();
    }
  }

  /**
   * {@code this} for the wrapper's own types, including {@code Connection} itself: handing out the
   * driver's connection for {@code unwrap(Connection.class)} would bypass the fence (checklist 2).
   * Vendor types ({@code PGConnection}, ...) reach the driver, which can run SQL past the wrapper,
   * so the open transaction is verified first (checklist 3).
   */
  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    if (iface.isInstance(this)) {
      return iface.cast(this);
    }
    fence.verifyIfInTransaction();
    return iface.isInstance(delegate) ? iface.cast(delegate) : delegate.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || iface.isInstance(delegate) || delegate.isWrapperFor(iface);
  }

  @Override
  public String toString() {
    return "FencedConnection[" + delegate + "]";
  }
}
