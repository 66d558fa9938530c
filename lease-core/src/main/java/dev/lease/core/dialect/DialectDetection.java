package dev.lease.core.dialect;

import dev.lease.core.LeaseException;
import dev.lease.core.internal.SqlRules;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.util.Locale;

/** Which dialect a connection needs ({@link Dialect#detect}). */
final class DialectDetection {

  private DialectDetection() {}

  /**
   * Chooses the dialect from the connection's metadata, never from the URL: MySQL Connector/J
   * connected to MariaDB reports product "MySQL" and a version such as "5.5.5-10.11.19-MariaDB".
   *
   * @throws LeaseException if the database is not supported
   */
  static Dialect detect(Connection c, String table, String clockFunction, SqlRules rules)
      throws SQLException {
    DatabaseMetaData md = c.getMetaData();
    String product = md.getDatabaseProductName();
    String version = md.getDatabaseProductVersion();
    String p = product == null ? "" : product.toLowerCase(Locale.ROOT);
    String v = version == null ? "" : version.toLowerCase(Locale.ROOT);
    String fn = clockFunction == null ? null : clockFunction + "()";
    if (p.contains("postgresql")) {
      return new PostgresDialect(table, fn, rules);
    }
    if (p.contains("mariadb") || (p.contains("mysql") && v.contains("mariadb"))) {
      MultiWriterCheck.refuseMultiWriter(c, "MariaDB");
      return new MySqlDialect(table, fn, true, rules);
    }
    if (p.contains("mysql")) {
      MultiWriterCheck.refuseMultiWriter(c, "MySQL");
      return new MySqlDialect(table, fn, false, rules);
    }
    if (p.contains("sqlite")) {
      SqliteDialect.checkVersion(c);
      return new SqliteDialect(table, fn, rules);
    }
    throw new LeaseException(
        "database "
            + product
            + " "
            + version
            + " is not supported; the"
            + " lease table must live in "
            + Dialect.SUPPORTED);
  }
}
