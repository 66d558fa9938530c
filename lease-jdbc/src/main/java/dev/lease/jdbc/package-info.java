/**
 * Fencing inside the application's own transaction: {@link dev.lease.jdbc.FencedDataSource}, the
 * {@code jdbc:fenced:} {@link dev.lease.jdbc.FencedDriver} and {@link
 * dev.lease.jdbc.FencedConnections} wrap connections so that every transaction opened while a lease
 * is bound to the thread ({@link dev.lease.core.LeaseContext}) is verified by the database, and a
 * holder that lost its lease can no longer commit ({@link dev.lease.jdbc.LeaseLostSQLException}).
 *
 * <p>This package is the API only: the entry points above, {@link dev.lease.jdbc.FencingOptions}
 * and its enums, and the {@link dev.lease.jdbc.FencedConnection} marker. The fence itself is in
 * {@code dev.lease.jdbc.internal.fence}, the SQL reading in {@code dev.lease.jdbc.internal.sql}
 * (neither exported), the agent's bridge in {@code dev.lease.jdbc.internal}.
 */
package dev.lease.jdbc;
