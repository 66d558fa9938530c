package dev.lease.jdbc;

import java.sql.PreparedStatement;

/** A fenced prepared statement; its SQL's {@link SqlKind} is classified once, at prepare time. */
class FencingPreparedStatement extends PreparedStatementDelegate {

  FencingPreparedStatement(FencingConnection connection, PreparedStatement delegate, int kind) {
    super(connection, delegate, kind);
  }
}
