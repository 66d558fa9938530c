package dev.lease.jdbc.internal.fence;

import java.sql.SQLException;

/** One JDBC call, run by the fence around its checks. */
@FunctionalInterface
interface SqlCall<T> {
  T call() throws SQLException;
}
