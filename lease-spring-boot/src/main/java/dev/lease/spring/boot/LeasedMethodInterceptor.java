package dev.lease.spring.boot;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseLostException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseReleasedException;
import dev.lease.core.internal.CallerWork;
import dev.lease.core.internal.LeaseInternals;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

/**
 * Runs {@link Leased} methods under their lease, on the calling thread: claim without waiting (skip
 * when held elsewhere), keep renewed, bind ({@link LeaseContext}), release after.
 *
 * <p>The method runs on the caller's thread rather than on a thread of its own (as {@code
 * LeaseManager.runUnder} does), so what Spring keeps per thread (the caller's transaction, security
 * and request context, MDC) still applies inside it. lease-core binds that thread to the lease as
 * the work under it ({@code LeaseInternals.bindCurrentThread}), so its lifecycle is runUnder's: a
 * loss interrupts the thread at once and runs the {@link dev.lease.core.FailurePolicy} if the
 * method has not returned after the grace period; a release ({@code LeaseManager.close()} at
 * shutdown) interrupts it and waits up to the grace period for it to end before the row is given
 * back. Nothing of that is done here.
 *
 * <p>A call inside a Spring-managed transaction of its caller keeps its lease held, renewed and
 * bound to the thread until that transaction completes ({@link EnclosingTransaction}): what the
 * method wrote commits then. The work binding (interrupt, failure policy) still ends at the
 * method's return; a loss after it poisons the transaction, so its commit is refused.
 */
final class LeasedMethodInterceptor implements MethodInterceptor {

  private static final Logger log = LoggerFactory.getLogger(LeasedMethodInterceptor.class);

  /** spring-tx present: asked here, since {@link EnclosingTransaction} cannot load without it. */
  private static final boolean SPRING_TX =
      ClassUtils.isPresent(
          "org.springframework.transaction.support.TransactionSynchronizationManager",
          LeasedMethodInterceptor.class.getClassLoader());

  /** What a lost or released call's exception says when no DataSource is fenced. */
  static final String NOT_FENCED =
      "; no DataSource is fenced (lease.fencing.enabled is not true), so nothing refused its"
          + " transactions: what it wrote after that may have committed";

  private final Supplier<LeaseManager> manager;
  private final LeaseNameResolver names;
  private final LeasesInUse inUse;
  private final Supplier<List<LeasedCallListener>> listeners;
  private final boolean transactionAware;
  private final BooleanSupplier fenced;
  private final Map<Method, Optional<Leased>> annotations = new ConcurrentHashMap<>();

  LeasedMethodInterceptor(
      Supplier<LeaseManager> manager,
      LeaseNameResolver names,
      LeasesInUse inUse,
      Supplier<List<LeasedCallListener>> listeners) {
    this(manager, names, inUse, listeners, SPRING_TX, () -> true);
  }

  LeasedMethodInterceptor(
      Supplier<LeaseManager> manager,
      LeaseNameResolver names,
      LeasesInUse inUse,
      Supplier<List<LeasedCallListener>> listeners,
      BooleanSupplier fenced) {
    this(manager, names, inUse, listeners, SPRING_TX, fenced);
  }

  /**
   * @param transactionAware whether a call inside a Spring-managed transaction keeps its lease
   *     until that transaction completes (always, when spring-tx is present; false only for the
   *     tests' negative control, which shows what releasing at the method's return does)
   */
  LeasedMethodInterceptor(
      Supplier<LeaseManager> manager,
      LeaseNameResolver names,
      LeasesInUse inUse,
      Supplier<List<LeasedCallListener>> listeners,
      boolean transactionAware) {
    this(manager, names, inUse, listeners, transactionAware, () -> true);
  }

  /**
   * @param fenced whether the starter fences a DataSource ({@code lease.fencing.enabled=true}): a
   *     lost or released call's exception then says its later transactions were refused; without a
   *     fence nothing refused them, and it says so
   */
  private LeasedMethodInterceptor(
      Supplier<LeaseManager> manager,
      LeaseNameResolver names,
      LeasesInUse inUse,
      Supplier<List<LeasedCallListener>> listeners,
      boolean transactionAware,
      BooleanSupplier fenced) {
    this.fenced = fenced;
    this.manager = manager;
    this.names = names;
    this.inUse = inUse;
    this.listeners = listeners;
    this.transactionAware = transactionAware;
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    Object target = invocation.getThis();
    Method method = invocation.getMethod();
    Method specific =
        target != null ? AopUtils.getMostSpecificMethod(method, target.getClass()) : method;
    Optional<Leased> leased =
        annotations.computeIfAbsent(
            specific,
            m ->
                Optional.ofNullable(AnnotatedElementUtils.findMergedAnnotation(m, Leased.class))
                    .or(
                        () ->
                            Optional.ofNullable(
                                AnnotatedElementUtils.findMergedAnnotation(method, Leased.class))));
    if (leased.isEmpty()) {
      return invocation.proceed();
    }
    String name = names.resolve(leased.get().value(), specific, invocation.getArguments(), target);
    LeaseManager leases = manager.get();

    Optional<Lease> outer = LeaseContext.current();
    if (outer.isPresent()
        && outer.get().name().equals(name)
        && outer.get().manager() == leases
        && outer.get().isHeld()) {
      return invocation.proceed(); // a nested call under the lease this thread already holds
    }

    // a closed manager (shutdown under way) throws IllegalStateException: the call neither runs
    // nor counts as skipped, since no other replica is known to run it
    Optional<Lease> claimed = leases.tryClaim(name);
    if (claimed.isEmpty()) {
      log.debug("{}: lease {} is held elsewhere; skipped", specific, name);
      tell(name, LeasedCallListener.Outcome.SKIPPED);
      return skippedValue(specific.getReturnType());
    }
    Lease lease = claimed.get();
    Object result = null;
    Throwable failure = null;
    boolean stopped;
    boolean releasedFirst;
    LeasesInUse.Use use = inUse.use(lease);
    LeaseContext.Scope scope = null;
    boolean deferred = false;
    try {
      CallerWork work = LeaseInternals.bindCurrentThread(lease);
      try {
        lease.hold();
        scope = LeaseContext.bind(lease);
        try {
          result = invocation.proceed();
        } catch (Throwable t) {
          failure = t;
        }
      } finally {
        releasedFirst = lease.isReleased(); // a release gave up waiting for the method
        stopped = work.end();
        if (stopped) {
          Thread.interrupted(); // the interrupt was the lease's (loss or release), not the caller's
        }
      }
      if (!stopped && scope != null && transactionAware) {
        // inside the caller's transaction: what the method wrote commits later, so the lease stays
        // held, renewed and bound to the thread until that transaction completes
        LeaseContext.Scope bound = scope;
        deferred = EnclosingTransaction.runAfterCompletion(() -> end(lease, bound, use));
      }
    } finally {
      if (!deferred) {
        end(lease, scope, use);
      }
    }
    if (stopped && lease.isLost()) {
      tell(name, LeasedCallListener.Outcome.LOST);
      throw new LeaseLostException(
          lease,
          lease
              + " was lost ("
              + lease.lossReason().map(Enum::name).orElse("?")
              + ") while "
              + specific
              + " ran; it was interrupted"
              + (fenced.getAsBoolean()
                  ? ", its fenced transactions from then on were refused"
                  : NOT_FENCED),
          failure);
    }
    if (stopped) {
      tell(name, LeasedCallListener.Outcome.STOPPED);
      throw new LeaseReleasedException(
          lease,
          lease
              + " was released while "
              + specific
              + " ran (the LeaseManager was closed: shutdown); it was interrupted"
              + (releasedFirst
                  ? " and did not return within the grace period"
                      + (fenced.getAsBoolean()
                          ? "; its fenced transactions from then on were refused"
                          : NOT_FENCED)
                  : " and returned before the release"),
          !releasedFirst,
          failure);
    }
    tell(name, LeasedCallListener.Outcome.RAN);
    if (failure != null) {
      throw failure;
    }
    return result;
  }

  /**
   * The end of a call under {@code lease}: unbinds it from the thread, ends its use and gives it
   * back; at the method's return, or after the transaction it ran in completed.
   */
  private static void end(Lease lease, LeaseContext.Scope scope, LeasesInUse.Use use) {
    try {
      if (scope != null) {
        scope.close();
      }
    } catch (IllegalStateException e) {
      // a transaction manager that completes on another thread (a JTA timeout): this thread's
      // binding cannot be undone from there; the lease is given back, so it is not held any more
      log.warn(
          "{} stays bound to the thread that called the @Leased method: {}", lease, e.getMessage());
    } finally {
      use.close(); // before the release, so a finished use is never reported as not held
      release(lease);
    }
  }

  private static void release(Lease lease) {
    try {
      lease.release();
    } catch (LeaseException e) {
      log.warn("could not release {}; it expires by itself: {}", lease, e.getMessage());
    }
  }

  private void tell(String name, LeasedCallListener.Outcome outcome) {
    for (LeasedCallListener l : listeners.get()) {
      try {
        l.called(name, outcome);
      } catch (RuntimeException e) {
        log.warn("leased call listener {} failed", l, e);
      }
    }
  }

  /** What a skipped call returns: null, an empty Optional, or a primitive's default. */
  static Object skippedValue(Class<?> type) {
    if (type == Optional.class) {
      return Optional.empty();
    }
    if (type == OptionalInt.class) {
      return OptionalInt.empty();
    }
    if (type == OptionalLong.class) {
      return OptionalLong.empty();
    }
    if (type == OptionalDouble.class) {
      return OptionalDouble.empty();
    }
    if (!type.isPrimitive() || type == void.class) {
      return null;
    }
    if (type == boolean.class) {
      return false;
    }
    if (type == char.class) {
      return '\0';
    }
    if (type == byte.class) {
      return (byte) 0;
    }
    if (type == short.class) {
      return (short) 0;
    }
    if (type == int.class) {
      return 0;
    }
    if (type == long.class) {
      return 0L;
    }
    if (type == float.class) {
      return 0f;
    }
    return 0d;
  }
}
