/**
 * Internal: the SQL of the lease protocol. {@code Dialect} is the contract (one method per
 * statement, with what it must do); {@code StandardDialect} writes the statements every database
 * writes the same way; {@code PostgresDialect}, {@code MySqlDialect} (MySQL and MariaDB) and {@code
 * SqliteDialect} write what differs, each database's statements in one place with the reason for
 * each non-obvious choice beside it: each database's verify is its class's {@code verifySql} (and
 * {@code commitProofSql}, {@code clientCheckedVerifySql}). The classes hold text and name the
 * values that go into it, in order; {@code LeaseSql} binds and runs every statement the same way,
 * and {@code DialectDetection} chooses the dialect for a connection.
 *
 * <p><b>Not API.</b> The types are public only because lease-core's other packages and lease-jdbc
 * call them; they may change in any release. Applications use {@link dev.lease.core.LeaseManager}.
 */
package dev.lease.core.dialect;
