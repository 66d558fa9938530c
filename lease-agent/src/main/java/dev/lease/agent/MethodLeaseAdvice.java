package dev.lease.agent;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import net.bytebuddy.asm.Advice;

/**
 * Inlined into each configured method of methods mode. The enter advice returns null to skip the
 * method body (another process holds the lease, or the claim failed: fail closed); the method then
 * returns its type's default value (null, 0, false).
 */
final class MethodLeaseAdvice {

  private MethodLeaseAdvice() {}

  /** Bound to the method's lease name at instrumentation time. */
  @Retention(RetentionPolicy.RUNTIME)
  @Target(ElementType.PARAMETER)
  @interface LeaseName {}

  /** Bound to {@code class#method} at instrumentation time, for log messages. */
  @Retention(RetentionPolicy.RUNTIME)
  @Target(ElementType.PARAMETER)
  @interface MethodKey {}

  @Advice.OnMethodEnter(skipOn = Advice.OnDefaultValue.class, suppress = Throwable.class)
  static Object enter(@LeaseName String leaseName, @MethodKey String method) {
    return MethodLeases.enter(leaseName, method);
  }

  @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
  static void exit(@Advice.Enter Object handle) {
    MethodLeases.exit(handle);
  }
}
