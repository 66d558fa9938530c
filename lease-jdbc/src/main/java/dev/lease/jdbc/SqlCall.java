package dev.lease.jdbc;

import java.sql.SQLException;

/** One JDBC call, run by the fence around its checks. */
@FunctionalInterface
interface SqlCall<T> {
  T call() throws SQLException;
}
