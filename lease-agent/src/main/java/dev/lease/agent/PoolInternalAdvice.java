package dev.lease.agent;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import net.bytebuddy.asm.Advice;

/**
 * Inlined into a physical scope (a pool's own connection factory or test, {@code
 * getPooledConnection}, {@code getXAConnection}, {@code pool-internals}): connections made inside
 * are the pool's physical connections and are never fenced.
 */
final class PoolInternalAdvice {

  private PoolInternalAdvice() {}

  /** Bound at instrumentation time: {@code class#method} of the scope, for messages. */
  @Retention(RetentionPolicy.RUNTIME)
  @Target(ElementType.PARAMETER)
  @interface Scope {}

  /** Bound at instrumentation time: true for a {@code pool-internals} entry of the user. */
  @Retention(RetentionPolicy.RUNTIME)
  @Target(ElementType.PARAMETER)
  @interface Configured {}

  @Advice.OnMethodEnter(suppress = Throwable.class)
  static void enter(
      @Scope String scope, @Configured boolean configured, @ConnectionAdvice.Key long key) {
    ConnectionFencing.enterPhysicalScope(scope, configured, key);
  }

  @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
  static void exit(@Configured boolean configured, @ConnectionAdvice.Key long key) {
    ConnectionFencing.exitPhysicalScope(configured, key);
  }
}
