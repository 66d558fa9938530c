package dev.lease.jdbc.internal.fence;

import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;

/**
 * A driver's {@code Array}: its result sets are fenced result sets whose {@code getStatement()}
 * wraps the driver's statement (pgjdbc builds them on a fresh {@code PgStatement} of the physical
 * connection), and the elements it returns are wrapped in turn.
 */
final class FencingArray extends FencedObject<Array> implements Array {

  FencingArray(ParentConnection connection, Array delegate) {
    super(connection, delegate);
  }

  private ResultSet resultSet(ResultSet rs) {
    return rs == null ? null : new FencingResultSet(connection, null, rs);
  }

  @Override
  public String getBaseTypeName() throws SQLException {
    return delegate.getBaseTypeName();
  }

  @Override
  public int getBaseType() throws SQLException {
    return delegate.getBaseType();
  }

  @Override
  public Object getArray() throws SQLException {
    return wrap(delegate.getArray());
  }

  @Override
  public Object getArray(Map<String, Class<?>> map) throws SQLException {
    return wrap(delegate.getArray(map));
  }

  @Override
  public Object getArray(long index, int count) throws SQLException {
    return wrap(delegate.getArray(index, count));
  }

  @Override
  public Object getArray(long index, int count, Map<String, Class<?>> map) throws SQLException {
    return wrap(delegate.getArray(index, count, map));
  }

  @Override
  public ResultSet getResultSet() throws SQLException {
    return resultSet(delegate.getResultSet());
  }

  @Override
  public ResultSet getResultSet(Map<String, Class<?>> map) throws SQLException {
    return resultSet(delegate.getResultSet(map));
  }

  @Override
  public ResultSet getResultSet(long index, int count) throws SQLException {
    return resultSet(delegate.getResultSet(index, count));
  }

  @Override
  public ResultSet getResultSet(long index, int count, Map<String, Class<?>> map)
      throws SQLException {
    return resultSet(delegate.getResultSet(index, count, map));
  }

  @Override
  public void free() throws SQLException {
    delegate.free();
  }
}
