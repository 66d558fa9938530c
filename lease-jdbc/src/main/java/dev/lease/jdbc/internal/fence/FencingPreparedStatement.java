package dev.lease.jdbc.internal.fence;

import java.io.InputStream;
import java.io.Reader;
import java.sql.Array;
import java.sql.Blob;
import java.sql.Clob;
import java.sql.PreparedStatement;
import java.sql.Ref;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLXML;
import java.util.Arrays;

/**
 * A fenced prepared statement; its SQL is read once, the first time it runs under a lease.
 *
 * <p>On a connection that can carry the verify in the first statement's round trip ({@link
 * FencingOptions#piggybackVerify()}: PostgreSQL, and MySQL/MariaDB whose driver sends texts of
 * several statements and prepares on the client), the parameters set are also remembered, so that
 * the first statement of a transaction can run as a second prepared statement of the driver, {@code
 * <verify>; <this SQL>}, with the verify's parameters first and the user's after them (the user's
 * indexes are shifted inside the wrapper; the text is the same for every lease of a manager, so
 * pgjdbc's statement cache and server-side prepare apply to it as to the plain one). Stream, reader
 * and LOB parameters are not remembered (a stream can be read once): such a statement verifies
 * separately. The parameter setters that call {@link #record}, {@link #replayable} and {@link
 * #markUnreplayable} are generated ({@code PreparedStatementDelegate},
 * tools/GenerateDelegates.java).
 */
class FencingPreparedStatement extends PreparedStatementDelegate {

  /** Remembers parameters (the connection may carry the verify along): null otherwise. */
  private Param[] params;

  /** A parameter that cannot be replayed was set since the last clearParameters. */
  private boolean unreplayable;

  /** The driver's statement of {@code <verify>; <sql>}, once used; null before. */
  private PreparedStatement combined;

  /** The verify text {@link #combined} was prepared with. */
  private String combinedVerify;

  FencingPreparedStatement(ParentConnection connection, PreparedStatement delegate, String sql) {
    super(connection, delegate, sql);
    if (!(this instanceof java.sql.CallableStatement) && connection.fence().mayPiggyback()) {
      params = new Param[8];
    }
  }

  @Override
  final void record(int index, Param p) {
    Param[] a = params;
    if (a == null || index < 1) {
      return;
    }
    if (index > a.length) {
      a = Arrays.copyOf(a, Math.max(index, a.length * 2));
      params = a;
    }
    a[index - 1] = p;
  }

  @Override
  final boolean replayable(Object value) {
    if (value instanceof InputStream
        || value instanceof Reader
        || value instanceof Blob
        || value instanceof Clob
        || value instanceof SQLXML
        || value instanceof Ref
        || value instanceof Array) {
      unreplayable = true;
      return false;
    }
    return true;
  }

  @Override
  final void markUnreplayable() {
    unreplayable = true;
  }

  /** Prepared with a generated-keys request: pgjdbc rewrites its SQL, a combined text would not. */
  final void generatedKeys() {
    params = null;
  }

  /** True if the parameters set so far can be set again on {@link #combined}. */
  @Override
  public final boolean canReplay() {
    return params != null && !unreplayable;
  }

  /**
   * The driver's statement of {@code verify; sql} with the user's parameters set after the verify's
   * {@code shift} ones (which the caller binds), prepared once per verify text.
   */
  @Override
  public final PreparedStatement combined(String verify, int shift) throws SQLException {
    PreparedStatement c = combined;
    if (c == null || !verify.equals(combinedVerify) || c.isClosed()) {
      if (c != null) {
        combined = null;
        c.close();
      }
      c =
          prepared
              .getConnection()
              .prepareStatement(
                  verify + ";\n" + sql,
                  prepared.getResultSetType(),
                  prepared.getResultSetConcurrency(),
                  prepared.getResultSetHoldability());
      combined = c;
      combinedVerify = verify;
    } else {
      c.clearParameters();
    }
    c.setMaxRows(prepared.getMaxRows());
    c.setQueryTimeout(prepared.getQueryTimeout());
    c.setMaxFieldSize(prepared.getMaxFieldSize());
    Param[] a = params;
    for (int i = 0; i < a.length; i++) {
      if (a[i] != null) {
        a[i].set(c, i + 1 + shift);
      }
    }
    return c;
  }

  @Override
  public boolean execute() throws SQLException {
    results = delegate;
    if (idle()) {
      return super.execute();
    }
    return connection
        .fence()
        .execute(this, StatementSource.PREPARED, null, () -> prepared.execute(), CallShape.EXECUTE);
  }

  @Override
  public ResultSet executeQuery() throws SQLException {
    results = delegate;
    if (idle()) {
      return super.executeQuery();
    }
    return resultSet(
        connection
            .fence()
            .execute(
                this,
                StatementSource.PREPARED,
                null,
                () -> prepared.executeQuery(),
                CallShape.QUERY));
  }

  @Override
  public int executeUpdate() throws SQLException {
    results = delegate;
    if (idle()) {
      return super.executeUpdate();
    }
    return connection
        .fence()
        .execute(
            this, StatementSource.PREPARED, null, () -> prepared.executeUpdate(), CallShape.UPDATE);
  }

  @Override
  public long executeLargeUpdate() throws SQLException {
    results = delegate;
    if (idle()) {
      return super.executeLargeUpdate();
    }
    return connection
        .fence()
        .execute(
            this,
            StatementSource.PREPARED,
            null,
            () -> prepared.executeLargeUpdate(),
            CallShape.LARGE_UPDATE);
  }

  @Override
  public void clearParameters() throws SQLException {
    prepared.clearParameters();
    if (params != null) {
      Arrays.fill(params, null);
    }
    unreplayable = false;
  }

  @Override
  void closeMore() throws SQLException {
    PreparedStatement c = combined;
    combined = null;
    if (c != null) {
      c.close();
    }
  }
}
