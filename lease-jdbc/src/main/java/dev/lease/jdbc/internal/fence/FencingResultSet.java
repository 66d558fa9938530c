package dev.lease.jdbc.internal.fence;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * A result set whose {@link #getStatement()} returns the fenced statement (HikariCP #221, OTel
 * #10550) and whose row changes on an updatable result set ({@code insertRow}, {@code updateRow},
 * {@code deleteRow}) are fenced like statements.
 */
final class FencingResultSet extends ResultSetDelegate {

  private final ParentConnection connection;
  private Statement statement;

  /**
   * @param statement the fenced statement, or null for metadata result sets (wrapped on demand)
   */
  FencingResultSet(ParentConnection connection, Statement statement, ResultSet delegate) {
    super(delegate);
    this.connection = connection;
    this.statement = statement;
  }

  @Override
  boolean idle() {
    return connection.fence().idle();
  }

  @Override
  SQLException failed(SQLException e) {
    return connection.fence().failed(e);
  }

  @Override
  <T> T execute(StatementSource source, String sql, SqlCall<T> call) throws SQLException {
    return connection
        .fence()
        .execute(
            statement instanceof StatementHandle ? (StatementHandle) statement : null,
            source,
            sql,
            call);
  }

  @Override
  Object object(Object value) {
    return connection.wrap(value);
  }

  @Override
  <T> T object(T value, Class<T> type) throws SQLException {
    return connection.wrap(value, type);
  }

  /**
   * Closing the result set of an autocommit query completes the query: the verified transaction it
   * kept open (MySQL streaming) ends here.
   */
  @Override
  public void close() throws SQLException {
    try {
      delegate.close();
    } finally {
      if (statement instanceof StatementHandle) {
        connection.fence().resultDone((StatementHandle) statement);
      }
    }
  }

  @Override
  public Statement getStatement() throws SQLException {
    if (statement == null) {
      Statement raw = delegate.getStatement();
      if (raw == null) {
        return null;
      }
      statement = connection.statement(raw);
    }
    return statement;
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    if (iface.isInstance(this)) {
      return iface.cast(this);
    }
    connection.fence().beforeUnwrap(iface); // a driver result set leads to the driver's statement
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
