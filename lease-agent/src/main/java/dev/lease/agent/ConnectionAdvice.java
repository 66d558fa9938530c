package dev.lease.agent;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.sql.Connection;
import net.bytebuddy.asm.Advice;

/**
 * Inlined into every method that hands out a connection: {@code DataSource.getConnection} (also
 * where a DataSource inherits it from a class that is not one), {@code Driver.connect} and {@code
 * PooledConnection.getConnection}. Bodies only call {@link ConnectionFencing}; exceptions are
 * suppressed so that the advice can never break the method it is woven into. Failing closed is the
 * helper's job: {@link ConnectionFencing#exit} never throws, it turns any failure (its own, or a
 * failed {@code enter}, whose suppressed entry is null) into a connection that refuses every
 * statement, never the original.
 */
final class ConnectionAdvice {

  private ConnectionAdvice() {}

  /** Bound at instrumentation time: which kind of method ({@link ConnectionFencing#DRIVER}...). */
  @Retention(RetentionPolicy.RUNTIME)
  @Target(ElementType.PARAMETER)
  @interface Kind {}

  /** Bound at instrumentation time: this JVM's key ({@link ConnectionFencing#key()}). */
  @Retention(RetentionPolicy.RUNTIME)
  @Target(ElementType.PARAMETER)
  @interface Key {}

  @Advice.OnMethodEnter(suppress = Throwable.class)
  static ConnectionFencing.Entry enter(@Key long key) {
    return ConnectionFencing.enter(key);
  }

  @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
  static void exit(
      @Kind int kind,
      @Advice.Enter ConnectionFencing.Entry entry,
      @Advice.This(optional = true) Object self,
      @Advice.Return(readOnly = false) Connection connection) {
    connection = ConnectionFencing.exit(kind, entry, self, connection);
  }
}
