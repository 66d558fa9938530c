package dev.lease.core;

/**
 * The databases the lease table can live in, for {@link LeaseManager#ddl(Database, String)}. A
 * plain enum that knows nothing of the dialects, and they nothing of it: {@code LeaseManager.ddl}
 * maps one to the other.
 */
public enum Database {
  POSTGRESQL,
  MYSQL,
  MARIADB,
  SQLITE;
}
