package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import java.util.List;

/** The databases the lease table can live in, for {@link LeaseManager#ddl(Database, String)}. */
public enum Database {
  POSTGRESQL,
  MYSQL,
  MARIADB,
  SQLITE;

  List<String> ddl(String table) {
    return Dialect.of(this, LeaseNames.table(table)).ddl();
  }
}
