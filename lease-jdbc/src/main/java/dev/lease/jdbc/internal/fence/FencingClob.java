package dev.lease.jdbc.internal.fence;

import java.io.InputStream;
import java.io.OutputStream;
import java.io.Reader;
import java.io.Writer;
import java.sql.Clob;
import java.sql.NClob;
import java.sql.SQLException;

/**
 * A driver's {@code Clob}: its writes run through the fence as a statement would (pgjdbc's clob is
 * a large object; {@code truncate} changes it in the database), and so does every write to the
 * streams its setters return.
 */
class FencingClob extends FencedObject<Clob> implements Clob {

  FencingClob(ParentConnection connection, Clob delegate) {
    super(connection, delegate);
  }

  /** The {@code NClob} flavour (a Clob with nothing more). */
  static final class N extends FencingClob implements NClob {
    N(ParentConnection connection, NClob delegate) {
      super(connection, delegate);
    }
  }

  @Override
  public long length() throws SQLException {
    return delegate.length();
  }

  @Override
  public String getSubString(long pos, int length) throws SQLException {
    return delegate.getSubString(pos, length);
  }

  @Override
  public Reader getCharacterStream() throws SQLException {
    return delegate.getCharacterStream();
  }

  @Override
  public Reader getCharacterStream(long pos, long length) throws SQLException {
    return delegate.getCharacterStream(pos, length);
  }

  @Override
  public InputStream getAsciiStream() throws SQLException {
    return delegate.getAsciiStream();
  }

  @Override
  public long position(String searchstr, long start) throws SQLException {
    return delegate.position(searchstr, start);
  }

  @Override
  public long position(Clob searchstr, long start) throws SQLException {
    return delegate.position(FencedObject.driverObjectOf(searchstr), start);
  }

  @Override
  public int setString(long pos, String str) throws SQLException {
    return write(() -> delegate.setString(pos, str));
  }

  @Override
  public int setString(long pos, String str, int offset, int len) throws SQLException {
    return write(() -> delegate.setString(pos, str, offset, len));
  }

  @Override
  public OutputStream setAsciiStream(long pos) throws SQLException {
    OutputStream out = write(() -> delegate.setAsciiStream(pos));
    return out == null ? null : new FencedStreams.Output(this, out);
  }

  @Override
  public Writer setCharacterStream(long pos) throws SQLException {
    Writer out = write(() -> delegate.setCharacterStream(pos));
    return out == null ? null : new FencedStreams.CharOutput(this, out);
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
