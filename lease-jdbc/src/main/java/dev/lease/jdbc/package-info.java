/**
 * Fencing inside the application's own transaction: {@link dev.lease.jdbc.FencedDataSource}, the
 * {@code jdbc:fenced:} {@link dev.lease.jdbc.FencedDriver} and {@link
 * dev.lease.jdbc.FencedConnections} wrap connections so that every transaction opened while a lease
 * is bound to the thread ({@link dev.lease.core.LeaseContext}) is verified by the database, and a
 * holder that lost its lease can no longer commit ({@link dev.lease.jdbc.LeaseLostSQLException}).
 *
 * <p>Public: the entry points above, {@link dev.lease.jdbc.FencingOptions} and its enums, and the
 * {@link dev.lease.jdbc.FencedConnection} marker. Package-private: {@code TransactionFence} (the
 * rules: where the verify runs, poisoning, resets), {@code SqlKind} (transaction control written as
 * SQL), the {@code Fencing*} wrappers and the generated {@code *Delegate} base classes ({@code
 * tools/GenerateDelegates.java}) they extend.
 */
package dev.lease.jdbc;
