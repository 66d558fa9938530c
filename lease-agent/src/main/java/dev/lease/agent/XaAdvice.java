package dev.lease.agent;

import net.bytebuddy.asm.Advice;

/** Inlined into {@code XAResource.start}: the resource's handles are in a global transaction. */
final class XaAdvice {

  private XaAdvice() {}

  /** Inlined into {@code start}. */
  static final class Start {
    private Start() {}

    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object resource) {
      XaTracking.started(resource);
    }
  }

  /**
   * Inlined into {@code end}, {@code prepare}, {@code commit}, {@code rollback}, {@code forget}.
   */
  static final class End {
    private End() {}

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.This Object resource) {
      XaTracking.ended(resource);
    }
  }
}
