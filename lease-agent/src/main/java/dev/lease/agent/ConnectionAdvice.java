package dev.lease.agent;

import java.sql.Connection;
import net.bytebuddy.asm.Advice;

/**
 * Inlined into every {@code DataSource.getConnection} and {@code Driver.connect} implementation.
 * Bodies only call {@link ConnectionFencing}; exceptions are suppressed so that the advice can
 * never break the method it is woven into (failing closed is the helper's job).
 */
final class ConnectionAdvice {

  private ConnectionAdvice() {}

  @Advice.OnMethodEnter(suppress = Throwable.class)
  static boolean enter() {
    return ConnectionFencing.enter();
  }

  @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
  static void exit(
      @Advice.Enter boolean outermost, @Advice.Return(readOnly = false) Connection connection) {
    connection = ConnectionFencing.exit(outermost, connection);
  }
}
