package dev.lease.jdbc.internal.fence;

import java.sql.Ref;
import java.sql.SQLException;
import java.util.Map;

/**
 * A driver's {@code Ref} (an SQL REF value; none of the supported drivers returns one today): the
 * value it points at is wrapped, and {@code setObject} writes through the fence.
 */
final class FencingRef extends FencedObject<Ref> implements Ref {

  FencingRef(ParentConnection connection, Ref delegate) {
    super(connection, delegate);
  }

  @Override
  public String getBaseTypeName() throws SQLException {
    return delegate.getBaseTypeName();
  }

  @Override
  public Object getObject(Map<String, Class<?>> map) throws SQLException {
    return wrap(delegate.getObject(map));
  }

  @Override
  public Object getObject() throws SQLException {
    return wrap(delegate.getObject());
  }

  @Override
  public void setObject(Object value) throws SQLException {
    write(
        () -> {
          delegate.setObject(FencedObject.raw(value));
          return null;
        });
  }
}
