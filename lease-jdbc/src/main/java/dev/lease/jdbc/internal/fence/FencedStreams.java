package dev.lease.jdbc.internal.fence;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Writer;
import java.sql.SQLException;

/**
 * The streams a LOB's setters return: the driver writes to the database when its buffer fills, on
 * flush and on close, so every call runs through the fence ({@link FencedObject#write}); a refusal
 * surfaces as an {@code IOException} whose cause is the fence's {@link LeaseLostSQLException}.
 */
final class FencedStreams {

  private FencedStreams() {}

  @FunctionalInterface
  interface IoCall {
    void call() throws IOException;
  }

  static void run(FencedObject<?> owner, IoCall call) throws IOException {
    IOException[] failed = new IOException[1];
    try {
      owner.write(
          () -> {
            try {
              call.call();
            } catch (IOException e) {
              failed[0] = e;
            }
            return null;
          });
    } catch (SQLException e) {
      throw new IOException(e.getMessage(), e);
    }
    if (failed[0] != null) {
      throw failed[0];
    }
  }

  static final class Output extends OutputStream {
    private final FencedObject<?> owner;
    private final OutputStream out;

    Output(FencedObject<?> owner, OutputStream out) {
      this.owner = owner;
      this.out = out;
    }

    @Override
    public void write(int b) throws IOException {
      run(owner, () -> out.write(b));
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      run(owner, () -> out.write(b, off, len));
    }

    @Override
    public void flush() throws IOException {
      run(owner, out::flush);
    }

    @Override
    public void close() throws IOException {
      run(owner, out::close);
    }
  }

  static final class CharOutput extends Writer {
    private final FencedObject<?> owner;
    private final Writer out;

    CharOutput(FencedObject<?> owner, Writer out) {
      this.owner = owner;
      this.out = out;
    }

    @Override
    public void write(char[] cbuf, int off, int len) throws IOException {
      run(owner, () -> out.write(cbuf, off, len));
    }

    @Override
    public void flush() throws IOException {
      run(owner, out::flush);
    }

    @Override
    public void close() throws IOException {
      run(owner, out::close);
    }
  }
}
