package dev.lease.jdbc.internal.fence;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * Metadata whose {@link #getConnection()} returns the fenced connection (checklist 1). Metadata
 * queries are not fenced: they read the catalogue, not the application's data.
 */
final class FencingDatabaseMetaData extends DatabaseMetaDataDelegate {

  private final ParentConnection connection;

  FencingDatabaseMetaData(ParentConnection connection, DatabaseMetaData delegate) {
    super(delegate);
    this.connection = connection;
  }

  ResultSet resultSet(ResultSet rs) {
    return rs == null ? null : new FencingResultSet(connection, null, rs);
  }

  @Override
  public Connection getConnection() {
    return connection.jdbc();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    if (iface.isInstance(this)) {
      return iface.cast(this);
    }
    connection.fence().beforeUnwrap(iface); // driver metadata leads to the driver's connection
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
