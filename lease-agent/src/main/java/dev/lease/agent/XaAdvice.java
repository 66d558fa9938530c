package dev.lease.agent;

import net.bytebuddy.asm.Advice;

/**
 * Inlined into {@code XAResource} methods: the resource's handles are in a global transaction
 * between {@code start} and {@code end}; {@code prepare} and a one-phase {@code commit} of a branch
 * whose lease is not held fail, and so does a MySQL/MariaDB {@code prepare} under STRICT, of a
 * branch that ran under a lease or of one the agent could not link with its handles while a lease
 * is in play ({@link XaTracking#beforePrepare}: not suppressed, the transaction manager gets its
 * {@code XAException}).
 */
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

  /** Inlined into {@code end}. */
  static final class End {
    private End() {}

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.This Object resource, @Advice.Argument(0) Object xid) {
      XaTracking.ended(resource, xid);
    }
  }

  /** Inlined into {@code prepare}. */
  static final class Prepare {
    private Prepare() {}

    @Advice.OnMethodEnter
    static void enter(@Advice.This Object resource, @Advice.Argument(0) Object xid)
        throws javax.transaction.xa.XAException {
      XaTracking.beforePrepare(resource, xid, true);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.This Object resource, @Advice.Argument(0) Object xid) {
      XaTracking.finished(resource, xid, false);
    }
  }

  /** Inlined into {@code commit(xid, onePhase)}. */
  static final class Commit {
    private Commit() {}

    @Advice.OnMethodEnter
    static void enter(
        @Advice.This Object resource,
        @Advice.Argument(0) Object xid,
        @Advice.Argument(1) boolean onePhase)
        throws javax.transaction.xa.XAException {
      if (onePhase) {
        XaTracking.beforePrepare(resource, xid, false);
      }
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.This Object resource, @Advice.Argument(0) Object xid) {
      XaTracking.finished(resource, xid, true);
    }
  }

  /** Inlined into {@code rollback} and {@code forget}. */
  static final class Finish {
    private Finish() {}

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.This Object resource, @Advice.Argument(0) Object xid) {
      XaTracking.finished(resource, xid, true);
    }
  }
}
