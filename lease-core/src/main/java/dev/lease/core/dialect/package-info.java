/**
 * Internal: the SQL of the lease protocol, one class per database ({@code PostgresDialect}, {@code
 * MySqlDialect} for MySQL and MariaDB, {@code SqliteDialect}), every statement of one database in
 * one place with the reason for each non-obvious choice beside it.
 *
 * <p><b>Not API.</b> The types are public only because lease-core's other packages and lease-jdbc
 * call them; they may change in any release. Applications use {@link dev.lease.core.LeaseManager}.
 */
package dev.lease.core.dialect;
