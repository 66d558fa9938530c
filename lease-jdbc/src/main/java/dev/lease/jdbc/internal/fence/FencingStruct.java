package dev.lease.jdbc.internal.fence;

import java.sql.SQLException;
import java.sql.Struct;
import java.util.Map;

/** A driver's {@code Struct}: its attributes (arrays, LOBs, nested structs) are wrapped. */
final class FencingStruct extends FencedObject<Struct> implements Struct {

  FencingStruct(ParentConnection connection, Struct delegate) {
    super(connection, delegate);
  }

  @Override
  public String getSQLTypeName() throws SQLException {
    return delegate.getSQLTypeName();
  }

  @Override
  public Object[] getAttributes() throws SQLException {
    return (Object[]) wrap(delegate.getAttributes());
  }

  @Override
  public Object[] getAttributes(Map<String, Class<?>> map) throws SQLException {
    return (Object[]) wrap(delegate.getAttributes(map));
  }
}
