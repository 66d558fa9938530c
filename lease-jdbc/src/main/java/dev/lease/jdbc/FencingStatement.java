package dev.lease.jdbc;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * A fenced statement: its execute methods go through the connection's {@link TransactionFence};
 * {@link #getConnection()} returns the fenced connection. The transaction state is read from the
 * connection at execute time, never captured at prepare time, so statements prepared before a lease
 * was bound or cached by a pool are fenced too (checklist 25).
 */
class FencingStatement extends StatementDelegate {

  final FencingConnection connection;

  /** The {@link SqlKind} of a prepared statement's SQL, classified once at prepare time. */
  private final int kind;

  private volatile boolean closed;

  FencingStatement(FencingConnection connection, Statement delegate, int kind) {
    super(delegate);
    this.connection = connection;
    this.kind = kind;
  }

  final int kind(String sql) {
    return SqlKind.of(sql);
  }

  final int preparedKind() {
    return kind;
  }

  final boolean idle(int k) {
    return connection.fence.idle(k);
  }

  final <T> T execute(int k, SqlCall<T> call) throws SQLException {
    return connection.fence.execute(delegate, k, call);
  }

  final ResultSet resultSet(ResultSet rs) {
    return rs == null ? null : new FencingResultSet(connection, this, rs);
  }

  @Override
  public Connection getConnection() {
    return connection;
  }

  @Override
  public void close() throws SQLException {
    if (closed) {
      return;
    }
    closed = true;
    delegate.close();
  }

  @Override
  public boolean isClosed() throws SQLException {
    return closed || delegate.isClosed();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    if (iface.isInstance(this)) {
      return iface.cast(this);
    }
    connection.fence.verifyIfInTransaction();
    return iface.isInstance(delegate) ? iface.cast(delegate) : delegate.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || iface.isInstance(delegate) || delegate.isWrapperFor(iface);
  }

  @Override
  public String toString() {
    return "Fenced" + delegate;
  }
}
