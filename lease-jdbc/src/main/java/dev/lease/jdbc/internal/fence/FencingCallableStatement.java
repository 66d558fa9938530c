package dev.lease.jdbc.internal.fence;

import java.sql.CallableStatement;

/** A fenced callable statement. */
final class FencingCallableStatement extends CallableStatementDelegate {

  FencingCallableStatement(ParentConnection connection, CallableStatement delegate, String sql) {
    super(connection, delegate, sql);
  }
}
