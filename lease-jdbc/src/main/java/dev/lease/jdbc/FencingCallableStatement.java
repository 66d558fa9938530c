package dev.lease.jdbc;

import java.sql.CallableStatement;

/** A fenced callable statement. */
final class FencingCallableStatement extends CallableStatementDelegate {

  FencingCallableStatement(FencingConnection connection, CallableStatement delegate, int kind) {
    super(connection, delegate, kind);
  }
}
