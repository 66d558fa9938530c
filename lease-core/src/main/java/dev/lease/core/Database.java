package dev.lease.core;

import java.util.List;

/** The databases the lease table can live in, for {@link LeaseManager#ddl(Database, String)}. */
public enum Database {
  POSTGRESQL,
  MYSQL,
  MARIADB,
  SQLITE;

  Dialect dialect(String table) {
    return switch (this) {
      case POSTGRESQL -> new PostgresDialect(table, null);
      case MYSQL -> new MySqlDialect(table, null, false);
      case MARIADB -> new MySqlDialect(table, null, true);
      case SQLITE -> new SqliteDialect(table, null);
    };
  }

  List<String> ddl(String table) {
    return dialect(Names.table(table)).ddl();
  }
}
