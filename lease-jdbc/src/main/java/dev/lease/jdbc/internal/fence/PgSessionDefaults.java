package dev.lease.jdbc.internal.fence;

import java.lang.reflect.Method;
import java.sql.Connection;

/**
 * PostgreSQL's session default access mode as the server reports it, without a round trip (issue 25
 * item 7). A session whose default is read-only ({@code SET SESSION CHARACTERISTICS AS TRANSACTION
 * READ ONLY}, {@code default_transaction_read_only} set for the role or the database) makes every
 * transaction read-only while pgjdbc's {@code isReadOnly()} still answers false (it answers only
 * what {@code setReadOnly} set), so the fence took the STRICT lock and PostgreSQL refused it:
 * {@code 25006 cannot execute SELECT FOR KEY SHARE in a read-only transaction}. Since PostgreSQL 14
 * {@code default_transaction_read_only} is a reported parameter (ParameterStatus, at connect and on
 * every change), and pgjdbc keeps it: {@code PGConnection.getParameterStatus}. When it says on, the
 * fence asks the server about the open transaction, as it does for a connection flagged read-only.
 * Older servers do not report it: null, and only the flag is used.
 */
final class PgSessionDefaults {

  private final Object pg;
  private final Method status;

  private PgSessionDefaults(Object pg, Method status) {
    this.pg = pg;
    this.status = status;
  }

  private static final PgSessionDefaults NONE = new PgSessionDefaults(null, null);

  /**
   * pgjdbc's {@code PGConnection} type and its {@code getParameterStatus} as the class loader of a
   * delegate class sees them, looked up once per delegate class (a pool's proxy class, pgjdbc's
   * connection class), not on every borrow; empty where pgjdbc is not there.
   */
  private static final ClassValue<Object[]> LOOKUP =
      new ClassValue<>() {
        @Override
        protected Object[] computeValue(Class<?> delegateType) {
          try {
            Class<?> type =
                Class.forName("org.postgresql.PGConnection", false, delegateType.getClassLoader());
            return new Object[] {type, type.getMethod("getParameterStatus", String.class)};
          } catch (ReflectiveOperationException | LinkageError e) {
            return new Object[0];
          }
        }
      };

  /** For {@code delegate}; never fails (a driver that is not pgjdbc: nothing to read). */
  static PgSessionDefaults of(Connection delegate) {
    try {
      Object[] lookup = LOOKUP.get(delegate.getClass());
      if (lookup.length == 0) {
        return NONE;
      }
      Class<?> type = (Class<?>) lookup[0];
      Object pg =
          type.isInstance(delegate)
              ? delegate
              : delegate.isWrapperFor(type) ? delegate.unwrap(type) : null;
      if (pg == null) {
        return NONE;
      }
      return new PgSessionDefaults(pg, (Method) lookup[1]);
    } catch (java.sql.SQLException | RuntimeException e) {
      return NONE;
    }
  }

  /** True when the server reported {@code default_transaction_read_only = on}. */
  boolean readOnlyByDefault() {
    if (status == null) {
      return false;
    }
    try {
      return "on".equals(status.invoke(pg, "default_transaction_read_only"));
    } catch (ReflectiveOperationException | RuntimeException e) {
      return false;
    }
  }
}
