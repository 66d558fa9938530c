/**
 * Runs jobs on a schedule across replicas: {@link dev.lease.core.scheduler.LeaseScheduler}, each
 * instant of a job's {@link dev.lease.core.scheduler.Schedule} once across all replicas, judged by
 * the database clock.
 */
package dev.lease.core.scheduler;
