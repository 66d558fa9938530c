package dev.lease.jdbc;

import java.io.InputStream;
import java.io.Reader;
import java.math.BigDecimal;
import java.net.URL;
import java.sql.Array;
import java.sql.Blob;
import java.sql.Clob;
import java.sql.Date;
import java.sql.NClob;
import java.sql.PreparedStatement;
import java.sql.Ref;
import java.sql.ResultSet;
import java.sql.RowId;
import java.sql.SQLException;
import java.sql.SQLType;
import java.sql.SQLXML;
import java.sql.Time;
import java.sql.Timestamp;
import java.util.Arrays;
import java.util.Calendar;

/**
 * A fenced prepared statement; its SQL is read once, the first time it runs under a lease.
 *
 * <p>On a connection that can carry the verify in the first statement's round trip ({@link
 * FencingOptions#piggybackVerify()}, PostgreSQL), the parameters set are also remembered, so that
 * the first statement of a transaction can run as a second prepared statement of the driver, {@code
 * <verify>; <this SQL>}, with the verify's parameters first and the user's after them (the user's
 * indexes are shifted inside the wrapper; the text is the same for every lease of a manager, so
 * pgjdbc's statement cache and server-side prepare apply to it as to the plain one). Stream, reader
 * and LOB parameters are not remembered (a stream can be read once): such a statement verifies
 * separately.
 */
class FencingPreparedStatement extends PreparedStatementDelegate {

  /** Sets one remembered parameter at index {@code i} of another statement. */
  @FunctionalInterface
  interface Param {
    void set(PreparedStatement ps, int i) throws SQLException;
  }

  /** Remembers parameters (the connection may carry the verify along): null otherwise. */
  private Param[] params;

  /** A parameter that cannot be replayed was set since the last clearParameters. */
  private boolean unreplayable;

  /** The driver's statement of {@code <verify>; <sql>}, once used; null before. */
  private PreparedStatement combined;

  /** The verify text {@link #combined} was prepared with. */
  private String combinedVerify;

  FencingPreparedStatement(FencingConnection connection, PreparedStatement delegate, String sql) {
    super(connection, delegate, sql);
    if (!(this instanceof java.sql.CallableStatement) && connection.fence.mayPiggyback()) {
      params = new Param[8];
    }
  }

  private void record(int index, Param p) {
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

  private boolean replayable(Object value) {
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

  /** Prepared with a generated-keys request: pgjdbc rewrites its SQL, a combined text would not. */
  final void generatedKeys() {
    params = null;
  }

  /** True if the parameters set so far can be set again on {@link #combined}. */
  final boolean canReplay() {
    return params != null && !unreplayable;
  }

  /**
   * The driver's statement of {@code verify; sql} with the user's parameters set after the verify's
   * {@code shift} ones (which the caller binds), prepared once per verify text.
   */
  final PreparedStatement combined(String verify, int shift) throws SQLException {
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
    return connection.fence.execute(
        this,
        TransactionFence.PREPARED,
        null,
        () -> prepared.execute(),
        TransactionFence.SHAPE_EXECUTE);
  }

  @Override
  public ResultSet executeQuery() throws SQLException {
    results = delegate;
    if (idle()) {
      return super.executeQuery();
    }
    return resultSet(
        connection.fence.execute(
            this,
            TransactionFence.PREPARED,
            null,
            () -> prepared.executeQuery(),
            TransactionFence.SHAPE_QUERY));
  }

  @Override
  public int executeUpdate() throws SQLException {
    results = delegate;
    if (idle()) {
      return super.executeUpdate();
    }
    return connection.fence.execute(
        this,
        TransactionFence.PREPARED,
        null,
        () -> prepared.executeUpdate(),
        TransactionFence.SHAPE_UPDATE);
  }

  @Override
  public long executeLargeUpdate() throws SQLException {
    results = delegate;
    if (idle()) {
      return super.executeLargeUpdate();
    }
    return connection.fence.execute(
        this,
        TransactionFence.PREPARED,
        null,
        () -> prepared.executeLargeUpdate(),
        TransactionFence.SHAPE_LARGE_UPDATE);
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

  @Override
  public void setArray(int a0, Array a1) throws SQLException {
    prepared.setArray(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setAsciiStream(int a0, InputStream a1, int a2) throws SQLException {
    prepared.setAsciiStream(a0, a1, a2);
    unreplayable = true;
  }

  @Override
  public void setAsciiStream(int a0, InputStream a1, long a2) throws SQLException {
    prepared.setAsciiStream(a0, a1, a2);
    unreplayable = true;
  }

  @Override
  public void setAsciiStream(int a0, InputStream a1) throws SQLException {
    prepared.setAsciiStream(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setBigDecimal(int a0, BigDecimal a1) throws SQLException {
    prepared.setBigDecimal(a0, a1);
    record(a0, (ps, i) -> ps.setBigDecimal(i, a1));
  }

  @Override
  public void setBinaryStream(int a0, InputStream a1, int a2) throws SQLException {
    prepared.setBinaryStream(a0, a1, a2);
    unreplayable = true;
  }

  @Override
  public void setBinaryStream(int a0, InputStream a1, long a2) throws SQLException {
    prepared.setBinaryStream(a0, a1, a2);
    unreplayable = true;
  }

  @Override
  public void setBinaryStream(int a0, InputStream a1) throws SQLException {
    prepared.setBinaryStream(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setBlob(int a0, InputStream a1, long a2) throws SQLException {
    prepared.setBlob(a0, a1, a2);
    unreplayable = true;
  }

  @Override
  public void setBlob(int a0, InputStream a1) throws SQLException {
    prepared.setBlob(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setBlob(int a0, Blob a1) throws SQLException {
    prepared.setBlob(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setBoolean(int a0, boolean a1) throws SQLException {
    prepared.setBoolean(a0, a1);
    record(a0, (ps, i) -> ps.setBoolean(i, a1));
  }

  @Override
  public void setByte(int a0, byte a1) throws SQLException {
    prepared.setByte(a0, a1);
    record(a0, (ps, i) -> ps.setByte(i, a1));
  }

  @Override
  public void setBytes(int a0, byte[] a1) throws SQLException {
    prepared.setBytes(a0, a1);
    record(a0, (ps, i) -> ps.setBytes(i, a1));
  }

  @Override
  public void setCharacterStream(int a0, Reader a1, int a2) throws SQLException {
    prepared.setCharacterStream(a0, a1, a2);
    unreplayable = true;
  }

  @Override
  public void setCharacterStream(int a0, Reader a1, long a2) throws SQLException {
    prepared.setCharacterStream(a0, a1, a2);
    unreplayable = true;
  }

  @Override
  public void setCharacterStream(int a0, Reader a1) throws SQLException {
    prepared.setCharacterStream(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setClob(int a0, Reader a1, long a2) throws SQLException {
    prepared.setClob(a0, a1, a2);
    unreplayable = true;
  }

  @Override
  public void setClob(int a0, Reader a1) throws SQLException {
    prepared.setClob(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setClob(int a0, Clob a1) throws SQLException {
    prepared.setClob(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setDate(int a0, Date a1, Calendar a2) throws SQLException {
    prepared.setDate(a0, a1, a2);
    record(a0, (ps, i) -> ps.setDate(i, a1, a2));
  }

  @Override
  public void setDate(int a0, Date a1) throws SQLException {
    prepared.setDate(a0, a1);
    record(a0, (ps, i) -> ps.setDate(i, a1));
  }

  @Override
  public void setDouble(int a0, double a1) throws SQLException {
    prepared.setDouble(a0, a1);
    record(a0, (ps, i) -> ps.setDouble(i, a1));
  }

  @Override
  public void setFloat(int a0, float a1) throws SQLException {
    prepared.setFloat(a0, a1);
    record(a0, (ps, i) -> ps.setFloat(i, a1));
  }

  @Override
  public void setInt(int a0, int a1) throws SQLException {
    prepared.setInt(a0, a1);
    record(a0, (ps, i) -> ps.setInt(i, a1));
  }

  @Override
  public void setLong(int a0, long a1) throws SQLException {
    prepared.setLong(a0, a1);
    record(a0, (ps, i) -> ps.setLong(i, a1));
  }

  @Override
  public void setNCharacterStream(int a0, Reader a1, long a2) throws SQLException {
    prepared.setNCharacterStream(a0, a1, a2);
    unreplayable = true;
  }

  @Override
  public void setNCharacterStream(int a0, Reader a1) throws SQLException {
    prepared.setNCharacterStream(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setNClob(int a0, Reader a1, long a2) throws SQLException {
    prepared.setNClob(a0, a1, a2);
    unreplayable = true;
  }

  @Override
  public void setNClob(int a0, Reader a1) throws SQLException {
    prepared.setNClob(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setNClob(int a0, NClob a1) throws SQLException {
    prepared.setNClob(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setNString(int a0, String a1) throws SQLException {
    prepared.setNString(a0, a1);
    record(a0, (ps, i) -> ps.setNString(i, a1));
  }

  @Override
  public void setNull(int a0, int a1, String a2) throws SQLException {
    prepared.setNull(a0, a1, a2);
    record(a0, (ps, i) -> ps.setNull(i, a1, a2));
  }

  @Override
  public void setNull(int a0, int a1) throws SQLException {
    prepared.setNull(a0, a1);
    record(a0, (ps, i) -> ps.setNull(i, a1));
  }

  @Override
  public void setObject(int a0, Object a1, int a2, int a3) throws SQLException {
    prepared.setObject(a0, a1, a2, a3);
    if (replayable(a1)) {
      record(a0, (ps, i) -> ps.setObject(i, a1, a2, a3));
    }
  }

  @Override
  public void setObject(int a0, Object a1, int a2) throws SQLException {
    prepared.setObject(a0, a1, a2);
    if (replayable(a1)) {
      record(a0, (ps, i) -> ps.setObject(i, a1, a2));
    }
  }

  @Override
  public void setObject(int a0, Object a1, SQLType a2, int a3) throws SQLException {
    prepared.setObject(a0, a1, a2, a3);
    if (replayable(a1)) {
      record(a0, (ps, i) -> ps.setObject(i, a1, a2, a3));
    }
  }

  @Override
  public void setObject(int a0, Object a1, SQLType a2) throws SQLException {
    prepared.setObject(a0, a1, a2);
    if (replayable(a1)) {
      record(a0, (ps, i) -> ps.setObject(i, a1, a2));
    }
  }

  @Override
  public void setObject(int a0, Object a1) throws SQLException {
    prepared.setObject(a0, a1);
    if (replayable(a1)) {
      record(a0, (ps, i) -> ps.setObject(i, a1));
    }
  }

  @Override
  public void setRef(int a0, Ref a1) throws SQLException {
    prepared.setRef(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setRowId(int a0, RowId a1) throws SQLException {
    prepared.setRowId(a0, a1);
    record(a0, (ps, i) -> ps.setRowId(i, a1));
  }

  @Override
  public void setSQLXML(int a0, SQLXML a1) throws SQLException {
    prepared.setSQLXML(a0, a1);
    unreplayable = true;
  }

  @Override
  public void setShort(int a0, short a1) throws SQLException {
    prepared.setShort(a0, a1);
    record(a0, (ps, i) -> ps.setShort(i, a1));
  }

  @Override
  public void setString(int a0, String a1) throws SQLException {
    prepared.setString(a0, a1);
    record(a0, (ps, i) -> ps.setString(i, a1));
  }

  @Override
  public void setTime(int a0, Time a1, Calendar a2) throws SQLException {
    prepared.setTime(a0, a1, a2);
    record(a0, (ps, i) -> ps.setTime(i, a1, a2));
  }

  @Override
  public void setTime(int a0, Time a1) throws SQLException {
    prepared.setTime(a0, a1);
    record(a0, (ps, i) -> ps.setTime(i, a1));
  }

  @Override
  public void setTimestamp(int a0, Timestamp a1, Calendar a2) throws SQLException {
    prepared.setTimestamp(a0, a1, a2);
    record(a0, (ps, i) -> ps.setTimestamp(i, a1, a2));
  }

  @Override
  public void setTimestamp(int a0, Timestamp a1) throws SQLException {
    prepared.setTimestamp(a0, a1);
    record(a0, (ps, i) -> ps.setTimestamp(i, a1));
  }

  @Override
  public void setURL(int a0, URL a1) throws SQLException {
    prepared.setURL(a0, a1);
    record(a0, (ps, i) -> ps.setURL(i, a1));
  }

  @Override
  public void setUnicodeStream(int a0, InputStream a1, int a2) throws SQLException {
    prepared.setUnicodeStream(a0, a1, a2);
    unreplayable = true;
  }
}
