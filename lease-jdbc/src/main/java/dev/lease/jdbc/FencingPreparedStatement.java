package dev.lease.jdbc;

import java.sql.PreparedStatement;

/** A fenced prepared statement; its SQL is read once, the first time it runs under a lease. */
class FencingPreparedStatement extends PreparedStatementDelegate {

  FencingPreparedStatement(FencingConnection connection, PreparedStatement delegate, String sql) {
    super(connection, delegate, sql);
  }
}
