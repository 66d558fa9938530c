package dev.lease.core;

/**
 * The databases the lease table can live in, for {@link LeaseManager#ddl(Database, String)}. A
 * plain enum: the dialects depend on it, not it on them ({@code Dialect.of}).
 */
public enum Database {
  POSTGRESQL,
  MYSQL,
  MARIADB,
  SQLITE;
}
