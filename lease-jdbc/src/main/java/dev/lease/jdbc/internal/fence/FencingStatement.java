package dev.lease.jdbc.internal.fence;

import dev.lease.jdbc.internal.sql.SqlKind;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * A fenced statement: its execute methods go through the connection's {@link TransactionFence};
 * {@link #getConnection()} returns the fenced connection. The transaction state is read from the
 * connection at execute time, never captured at prepare time, so statements prepared before a lease
 * was bound or cached by a pool are fenced too (checklist 25). A prepared statement's SQL is read
 * ({@link SqlLexer}) once, the first time it runs under a lease; with no lease bound nothing is
 * read at all.
 */
class FencingStatement extends StatementDelegate implements StatementHandle {

  final ParentConnection connection;

  /** The SQL of a prepared or callable statement; null for a plain statement. */
  final String sql;

  /** {@link #sql} lexed, once (null until then). */
  private SqlSummary summary;

  /** The texts of {@code addBatch(String)} since the last execute or clear; null if none. */
  private List<String> batch;

  private volatile boolean closed;

  /**
   * The driver's statement whose results are current: {@link #delegate}, or after a prepared
   * statement's first statement of a transaction carried the verify along, the driver's statement
   * of the combined text ({@link FencingPreparedStatement#combined}).
   */
  Statement results;

  FencingStatement(ParentConnection connection, Statement delegate, String sql) {
    super(delegate);
    this.connection = connection;
    this.sql = sql;
    this.results = delegate;
  }

  @Override
  final boolean idle() {
    return connection.fence().idle();
  }

  @Override
  final SQLException failed(SQLException e) {
    return connection.fence().failed(e);
  }

  @Override
  final <T> T execute(StatementSource source, String text, SqlCall<T> call) throws SQLException {
    return connection.fence().execute(this, source, text, call);
  }

  /** What the statement runs, for {@link StatementSource#PREPARED} and {@code BATCH}. */
  @Override
  public final Statement driverStatement() {
    return delegate;
  }

  @Override
  public final String ownSql() {
    return sql;
  }

  @Override
  public final void resultsFrom(Statement results) {
    this.results = results;
  }

  @Override
  public final SqlSummary summary(StatementSource source, SqlLexer lexer) {
    SqlSummary own = summary;
    if (own == null) {
      // never "no statement" for a statement with nothing to read: that would skip the fence
      own = sql != null ? lexer.summarize(sql) : SqlSummary.one(SqlKind.OTHER);
      summary = own;
    }
    if (source != StatementSource.BATCH) {
      return own;
    }
    List<String> texts = batch;
    if (texts == null) {
      return own; // a prepared statement's batch: its own SQL, run once per entry
    }
    SqlSummary all = null;
    for (String t : texts) {
      all = SqlSummary.union(all, lexer.summarize(t), true);
    }
    return all == null ? SqlSummary.EMPTY : all;
  }

  // ---- the shapes a first statement can carry the verify in (Piggyback#piggyback)

  @Override
  public boolean execute(String text) throws SQLException {
    if (idle()) {
      return super.execute(text);
    }
    return connection
        .fence()
        .execute(this, StatementSource.TEXT, text, () -> delegate.execute(text), CallShape.EXECUTE);
  }

  @Override
  public ResultSet executeQuery(String text) throws SQLException {
    if (idle()) {
      return super.executeQuery(text);
    }
    return resultSet(
        connection
            .fence()
            .execute(
                this,
                StatementSource.TEXT,
                text,
                () -> delegate.executeQuery(text),
                CallShape.QUERY));
  }

  @Override
  public int executeUpdate(String text) throws SQLException {
    if (idle()) {
      return super.executeUpdate(text);
    }
    return connection
        .fence()
        .execute(
            this, StatementSource.TEXT, text, () -> delegate.executeUpdate(text), CallShape.UPDATE);
  }

  @Override
  public long executeLargeUpdate(String text) throws SQLException {
    if (idle()) {
      return super.executeLargeUpdate(text);
    }
    return connection
        .fence()
        .execute(
            this,
            StatementSource.TEXT,
            text,
            () -> delegate.executeLargeUpdate(text),
            CallShape.LARGE_UPDATE);
  }

  // ---- results: of the statement that ran last

  @Override
  public ResultSet getResultSet() throws SQLException {
    return resultSet(results.getResultSet());
  }

  @Override
  public ResultSet getGeneratedKeys() throws SQLException {
    return resultSet(results.getGeneratedKeys());
  }

  @Override
  public int getUpdateCount() throws SQLException {
    return results.getUpdateCount();
  }

  @Override
  public long getLargeUpdateCount() throws SQLException {
    return results.getLargeUpdateCount();
  }

  @Override
  public boolean getMoreResults() throws SQLException {
    return results.getMoreResults();
  }

  @Override
  public boolean getMoreResults(int current) throws SQLException {
    return results.getMoreResults(current);
  }

  @Override
  public java.sql.SQLWarning getWarnings() throws SQLException {
    Statement r = results;
    return r == delegate ? delegate.getWarnings() : r.getWarnings();
  }

  @Override
  public void clearWarnings() throws SQLException {
    delegate.clearWarnings();
    Statement r = results;
    if (r != delegate) {
      r.clearWarnings();
    }
  }

  @Override
  public void cancel() throws SQLException {
    Statement r = results;
    if (r != delegate) {
      r.cancel();
    }
    delegate.cancel();
  }

  /** Closes what a subclass opened besides {@link #delegate}. */
  void closeMore() throws SQLException {}

  @Override
  final ResultSet resultSet(ResultSet rs) {
    return rs == null ? null : new FencingResultSet(connection, this, rs);
  }

  @Override
  Object object(Object value) {
    return connection.wrap(value);
  }

  @Override
  <T> T object(T value, Class<T> type) throws SQLException {
    return connection.wrap(value, type);
  }

  @Override
  public void addBatch(String text) throws SQLException {
    delegate.addBatch(text);
    if (batch == null) {
      batch = new ArrayList<>();
    }
    batch.add(text);
  }

  @Override
  public void clearBatch() throws SQLException {
    batch = null;
    delegate.clearBatch();
  }

  @Override
  public int[] executeBatch() throws SQLException {
    results = delegate;
    try {
      if (idle()) {
        try {
          return delegate.executeBatch();
        } catch (SQLException e) {
          throw failed(e);
        }
      }
      return execute(StatementSource.BATCH, null, () -> delegate.executeBatch());
    } finally {
      batch = null; // JDBC empties the batch whatever the outcome
    }
  }

  @Override
  public long[] executeLargeBatch() throws SQLException {
    results = delegate;
    try {
      if (idle()) {
        try {
          return delegate.executeLargeBatch();
        } catch (SQLException e) {
          throw failed(e);
        }
      }
      return execute(StatementSource.BATCH, null, () -> delegate.executeLargeBatch());
    } finally {
      batch = null;
    }
  }

  @Override
  public Connection getConnection() {
    return connection.jdbc();
  }

  /** Closing a statement completes it: an autocommit query's open transaction ends here. */
  @Override
  public void close() throws SQLException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      try {
        closeMore();
      } finally {
        delegate.close();
      }
    } finally {
      connection.fence().resultDone(this);
    }
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
    connection.fence().beforeUnwrap(iface);
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
