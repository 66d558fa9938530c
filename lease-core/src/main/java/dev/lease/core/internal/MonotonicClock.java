package dev.lease.core.internal;

/**
 * The process's monotonic clock, in nanoseconds with an arbitrary origin; compare readings only by
 * subtraction. The default is {@link System#nanoTime()}; tests inject a virtual one.
 */
@FunctionalInterface
public interface MonotonicClock {
  MonotonicClock SYSTEM = System::nanoTime;

  long nanoTime();
}
