package dev.lease.core;

import java.util.Optional;
import java.util.OptionalLong;

/**
 * The lease bound to the current thread (or, in lease-agent's leader mode, to the whole process).
 * Fenced connections look it up on the thread that executes a statement, so work handed to another
 * thread (an executor, a virtual thread) must bind it there too.
 *
 * <pre>{@code
 * try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
 *   // statements on fenced connections here run under lease
 * }
 * }</pre>
 */
public final class LeaseContext {

  private static final ThreadLocal<Lease> CURRENT = new ThreadLocal<>();

  /** The lease of threads that bound none: lease-agent's leader mode fences the whole process. */
  private static volatile Lease processWide;

  private LeaseContext() {}

  /**
   * Binds {@code lease} to this thread until the scope closes; the outer binding then comes back.
   */
  public static Scope bind(Lease lease) {
    if (lease == null) {
      throw new IllegalArgumentException(
          "lease must not be null; to run without a lease, unbind()");
    }
    Lease outer = CURRENT.get();
    CURRENT.set(lease);
    return new Scope(outer, Thread.currentThread());
  }

  /** Runs with no lease bound until the scope closes. */
  public static Scope unbind() {
    Lease outer = CURRENT.get();
    CURRENT.remove();
    return new Scope(outer, Thread.currentThread());
  }

  /**
   * Makes {@code lease} the lease of every thread that has none bound itself (null clears it). For
   * a process that is fenced as a whole, such as lease-agent's leader mode (through {@code
   * LeaseInternals}): every transaction of every thread then runs under the process's leader lease,
   * and a lease that is not held (lost, or a placeholder while another process leads) refuses them.
   * A thread's own {@link #bind} still wins; {@link #unbind()} only removes the thread's binding.
   */
  static void bindProcessWide(Lease lease) {
    processWide = lease;
  }

  /** The process-wide lease, or null ({@link #bindProcessWide}). */
  static Lease processWide() {
    return processWide;
  }

  /** The lease bound to this thread, else the process-wide lease, if any. */
  public static Optional<Lease> current() {
    return Optional.ofNullable(currentOrNull());
  }

  /** Like {@link #current()}, or null: the allocation-free form for hot paths (lease-jdbc). */
  static Lease currentOrNull() {
    Lease lease = CURRENT.get();
    return lease != null ? lease : processWide;
  }

  /** The term of the current lease ({@link #current()}), if any. */
  public static OptionalLong currentTerm() {
    Lease lease = currentOrNull();
    return lease == null ? OptionalLong.empty() : OptionalLong.of(lease.term());
  }

  /** A binding; closing it restores the binding that was there before. */
  public static final class Scope implements AutoCloseable {
    private final Lease outer;
    private final Thread thread;
    private boolean closed;

    private Scope(Lease outer, Thread thread) {
      this.outer = outer;
      this.thread = thread;
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      if (Thread.currentThread() != thread) {
        throw new IllegalStateException(
            "a lease scope must be closed on the thread that opened it (" + thread.getName() + ")");
      }
      closed = true;
      if (outer == null) {
        CURRENT.remove();
      } else {
        CURRENT.set(outer);
      }
    }
  }
}
