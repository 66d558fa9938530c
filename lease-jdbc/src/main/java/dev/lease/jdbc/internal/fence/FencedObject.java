package dev.lease.jdbc.internal.fence;

import java.sql.SQLException;

/**
 * A driver object wrapped for one fenced connection: {@link #write} runs a call that may change the
 * database as the fence runs a statement (verified first; in autocommit mode as its own verified
 * transaction).
 */
abstract class FencedObject<D> {
  final ParentConnection connection;
  final D delegate;

  FencedObject(ParentConnection connection, D delegate) {
    this.connection = connection;
    this.delegate = delegate;
  }

  final D driverObject() {
    return delegate;
  }

  final <T> T write(SqlCall<T> call) throws SQLException {
    TransactionFence fence = connection.fence();
    if (fence.idle()) {
      try {
        return call.call();
      } catch (SQLException e) {
        throw fence.failed(e);
      }
    }
    return fence.execute(null, StatementSource.ROW_CHANGE, null, call);
  }

  final Object wrap(Object value) {
    return connection.wrap(value);
  }

  /** pgjdbc's setArray sends {@code toString()}; keep the driver's text. */
  @Override
  public String toString() {
    return String.valueOf(delegate);
  }

  // ---- on the way back to the driver: its own objects, never ours

  /**
   * {@code value}'s driver object if it is one of ours, else {@code value} (a pattern, a search).
   */
  @SuppressWarnings("unchecked")
  static <T> T driverObjectOf(T value) {
    return value instanceof FencedObject ? (T) ((FencedObject<?>) value).delegate : value;
  }

  /** {@code value}, or its driver object; a Java array with its elements' driver objects. */
  static Object raw(Object value) {
    if (value instanceof FencedObject) {
      return ((FencedObject<?>) value).driverObject();
    }
    if (value instanceof Object[]) {
      return raw((Object[]) value);
    }
    return value;
  }

  /** {@code values} with each of ours replaced by its driver object (a copy if any is). */
  static Object[] raw(Object[] values) {
    if (values == null) {
      return null;
    }
    Object[] out = values;
    for (int i = 0; i < values.length; i++) {
      if (values[i] instanceof FencedObject) {
        if (out == values) {
          out = java.util.Arrays.copyOf(values, values.length, Object[].class);
        }
        out[i] = raw(values[i]);
      }
    }
    return out;
  }

  static java.sql.Array raw(java.sql.Array value) {
    return driverObjectOf(value);
  }

  static java.sql.Blob raw(java.sql.Blob value) {
    return driverObjectOf(value);
  }

  static java.sql.Clob raw(java.sql.Clob value) {
    return driverObjectOf(value);
  }

  static java.sql.NClob raw(java.sql.NClob value) {
    return driverObjectOf(value);
  }

  static java.sql.Ref raw(java.sql.Ref value) {
    return driverObjectOf(value);
  }

  static java.sql.Struct raw(java.sql.Struct value) {
    return driverObjectOf(value);
  }
}
