package dev.lease.spring.boot;

import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseLostException;
import dev.lease.core.LeaseManager;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Runs {@link Leased} methods under their lease, on the calling thread: claim without waiting (skip
 * when held elsewhere), keep renewed, bind ({@link LeaseContext}), interrupt on loss, release
 * after.
 *
 * <p>The method runs on the caller's thread rather than on a thread of its own (as {@code
 * LeaseManager.runUnder} does), so what Spring keeps per thread (the caller's transaction, security
 * and request context, MDC) still applies inside it. The loss handling is runUnder's: the thread is
 * interrupted, and if the method has not returned after the grace period the {@link FailurePolicy}
 * runs.
 */
public final class LeasedMethodInterceptor implements MethodInterceptor, DisposableBean {

  private static final Logger log = LoggerFactory.getLogger(LeasedMethodInterceptor.class);

  private final Supplier<LeaseManager> manager;
  private final LeaseNameResolver names;
  private final LeasedWork work;
  private final Supplier<FailurePolicy> failurePolicy;
  private final Supplier<List<LeasedCallListener>> listeners;
  private final Map<Method, Optional<Leased>> annotations = new ConcurrentHashMap<>();
  private final ScheduledExecutorService graceTimer =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "leased-grace-timer");
            t.setDaemon(true);
            return t;
          });

  LeasedMethodInterceptor(
      Supplier<LeaseManager> manager,
      LeaseNameResolver names,
      LeasedWork work,
      Supplier<FailurePolicy> failurePolicy,
      Supplier<List<LeasedCallListener>> listeners) {
    this.manager = manager;
    this.names = names;
    this.work = work;
    this.failurePolicy = failurePolicy;
    this.listeners = listeners;
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

    Lease outer = LeaseContext.currentOrNull();
    if (outer != null && outer.name().equals(name) && outer.manager() == leases && outer.isHeld()) {
      return invocation.proceed(); // a nested call under the lease this thread already holds
    }

    Optional<Lease> claimed = leases.tryClaim(name);
    if (claimed.isEmpty()) {
      log.debug("{}: lease {} is held elsewhere; skipped", specific, name);
      tell(name, LeasedCallListener.Outcome.SKIPPED);
      return skippedValue(specific.getReturnType());
    }
    Lease lease = claimed.get();
    LeasedWork.Running running = work.begin(lease, Thread.currentThread());
    Object result = null;
    Throwable failure = null;
    try {
      lease.hold();
      try (Lease.Registration onLoss = lease.onLoss(l -> lost(l, running));
          LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        result = invocation.proceed();
      } catch (Throwable t) {
        failure = t;
      } finally {
        if (running.end()) {
          Thread.interrupted(); // the interrupt was ours (loss or shutdown), not the caller's
        }
      }
    } finally {
      release(lease);
      work.end(running); // after the release: a shutdown waits for it before closing the pool
    }
    if (lease.isLost()) {
      tell(name, LeasedCallListener.Outcome.LOST);
      throw new LeaseLostException(
          lease,
          lease
              + " was lost ("
              + lease.lossReason().map(Enum::name).orElse("?")
              + ") while "
              + specific
              + " ran; its transactions since then were refused",
          failure);
    }
    tell(name, LeasedCallListener.Outcome.RAN);
    if (failure != null) {
      throw failure;
    }
    return result;
  }

  private void lost(Lease lease, LeasedWork.Running running) {
    if (!running.interrupt()) {
      return;
    }
    long graceNanos = lease.manager().timings().gracePeriod().toNanos();
    graceTimer.schedule(
        () -> {
          if (!running.ended()) {
            failurePolicy.get().workDidNotStop(lease, running.thread());
          }
        },
        graceNanos,
        TimeUnit.NANOSECONDS);
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

  @Override
  public void destroy() {
    graceTimer.shutdownNow();
  }
}
