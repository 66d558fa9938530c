package dev.lease.jdbc.internal.fence;

import java.io.InputStream;
import java.io.OutputStream;
import java.sql.Blob;
import java.sql.SQLException;

/**
 * A driver's {@code Blob}. Its writes can change the database directly: pgjdbc's blob is a large
 * object written through the fast-path API (no statement at all), Connector/J's locator blob
 * ({@code emulateLocators}) runs UPDATEs on the physical connection. They run through the fence as
 * a statement would, and so does every write to the stream {@code setBinaryStream} returns (pgjdbc
 * buffers it and writes when the buffer fills, on flush and on close).
 */
final class FencingBlob extends FencedObject<Blob> implements Blob {

  FencingBlob(ParentConnection connection, Blob delegate) {
    super(connection, delegate);
  }

  @Override
  public long length() throws SQLException {
    return delegate.length();
  }

  @Override
  public byte[] getBytes(long pos, int length) throws SQLException {
    return delegate.getBytes(pos, length);
  }

  @Override
  public InputStream getBinaryStream() throws SQLException {
    return delegate.getBinaryStream();
  }

  @Override
  public InputStream getBinaryStream(long pos, long length) throws SQLException {
    return delegate.getBinaryStream(pos, length);
  }

  @Override
  public long position(byte[] pattern, long start) throws SQLException {
    return delegate.position(pattern, start);
  }

  @Override
  public long position(Blob pattern, long start) throws SQLException {
    return delegate.position(FencedObject.driverObjectOf(pattern), start);
  }

  @Override
  public int setBytes(long pos, byte[] bytes) throws SQLException {
    return write(() -> delegate.setBytes(pos, bytes));
  }

  @Override
  public int setBytes(long pos, byte[] bytes, int offset, int len) throws SQLException {
    return write(() -> delegate.setBytes(pos, bytes, offset, len));
  }

  @Override
  public OutputStream setBinaryStream(long pos) throws SQLException {
    OutputStream out = write(() -> delegate.setBinaryStream(pos));
    return out == null ? null : new FencedStreams.Output(this, out);
  }

  @Override
  public void truncate(long len) throws SQLException {
    write(
        () -> {
          delegate.truncate(len);
          return null;
        });
  }

  @Override
  public void free() throws SQLException {
    delegate.free();
  }
}
