package dev.lease.spring.boot;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method on a schedule, each instant once across all replicas, through
 * lease-core's {@code LeaseScheduler}: the instants are judged by the database's clock, a round
 * runs under the job's lease (renewed, bound to the round's thread so its transactions are fenced,
 * interrupted if the lease is lost), a round cut short runs again once, and instants missed while
 * every replica was down are not run late in a burst.
 *
 * <p>Give exactly one of {@link #cron()} and {@link #fixedRate()}. The method takes no argument, or
 * one: the round ({@code ScheduledJob.Round}) or its {@code java.time.Instant}. Its return value is
 * ignored; an exception ends the round (logged, not retried).
 *
 * <pre>{@code
 * @LeaseScheduled(name = "hourly-invoices", cron = "0 5 * * * *")
 * void issueInvoices(Instant instant) { ... }
 *
 * @LeaseScheduled(name = "cleanup", fixedRate = "10m")
 * void cleanup() { ... }
 * }</pre>
 *
 * <p>Unlike {@code @Scheduled} with a lock (ShedLock's {@code @SchedulerLock}), no replica's own
 * clock decides when an instant is due, so a fast replica cannot run an instant a second time after
 * a slow one ran and released it.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface LeaseScheduled {

  /**
   * The job's name: the lease claimed for every instant, the same on every replica. Placeholders
   * {@code ${...}} are resolved. Default: the simple class name and the method name, {@code
   * Invoices.issue}.
   */
  String name() default "";

  /**
   * A Spring cron expression (six fields, second first, as for {@code @Scheduled}), evaluated in
   * {@link #zone()}. Placeholders are resolved.
   */
  String cron() default "";

  /** The cron expression's time zone; default UTC (never the replica's own zone). */
  String zone() default "UTC";

  /**
   * A fixed rate: {@code 500ms}, {@code 10s}, {@code 5m}, {@code 1h}, {@code 1d}, or ISO-8601
   * ({@code PT10M}). The instants are {@link #anchor()} + k × rate, the same on every replica
   * whenever it started. Placeholders are resolved.
   */
  String fixedRate() default "";

  /**
   * The first instant of a fixed rate, ISO-8601 ({@code 2026-01-01T00:05:00Z}); default the epoch.
   */
  String anchor() default "1970-01-01T00:00:00Z";
}
