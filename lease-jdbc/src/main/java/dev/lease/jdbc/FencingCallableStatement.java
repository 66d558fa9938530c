package dev.lease.jdbc;

import java.sql.CallableStatement;

/** A fenced callable statement. */
final class FencingCallableStatement extends CallableStatementDelegate {

  FencingCallableStatement(FencingConnection connection, CallableStatement delegate, String sql) {
    super(connection, delegate, sql);
  }
}
