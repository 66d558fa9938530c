package dev.lease.agent;

import net.bytebuddy.asm.Advice;

/** Inlined into a pool's own connection factory: connections made inside are never fenced. */
final class PoolInternalAdvice {

  private PoolInternalAdvice() {}

  @Advice.OnMethodEnter(suppress = Throwable.class)
  static void enter() {
    ConnectionFencing.enterPoolInternal();
  }

  @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
  static void exit() {
    ConnectionFencing.exitPoolInternal();
  }
}
