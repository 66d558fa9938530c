package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.SqlRules;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * The lease table as {@link LeaseManager.Builder#build()} finds it: detects the database, creates
 * the table if asked, and checks that it is a lease table, saying what to do when it is not.
 */
final class LeaseTable {

  private LeaseTable() {}

  /**
   * The dialect of the database behind {@code dataSource}, once its lease table {@code table} is
   * there (created first if {@code createTable}) and has the columns of a lease table.
   */
  static Dialect open(
      DataSource dataSource,
      String table,
      String clockFunction,
      SqlRules rules,
      boolean createTable) {
    refuseFenced(dataSource, null);
    Dialect dialect;
    try (Connection c = dataSource.getConnection()) {
      refuseFenced(dataSource, c);
      dialect = Dialect.detect(c, table, clockFunction, rules);
      if (createTable) {
        try (Statement s = c.createStatement()) {
          for (String ddl : dialect.ddl()) {
            s.execute(ddl);
          }
        } catch (SQLException e) {
          if (readOnly(e)) {
            throw new LeaseException(
                "could not create lease table "
                    + table
                    + ": the server the DataSource reached is read-only ("
                    + e.getMessage()
                    + "); it is a replica or a standby. With several hosts in the URL, make it"
                    + " reach the primary: pgjdbc's targetServerType=primary; MariaDB Connector/J"
                    + " tries hosts in order and skips one it could not reach for deniedListTimeout"
                    + " (60 s by default), so after a failover put a proxy or a virtual IP in front"
                    + " of the pair, or list the primary first",
                e);
          }
          // reached the database, but could not create the table: not a connection problem
          throw new LeaseException(
              "could not create lease table "
                  + table
                  + " on "
                  + dialect.product()
                  + " ("
                  + e.getMessage()
                  + "); check that the user may create"
                  + " tables and that the name is not a reserved word, or create it in your"
                  + " migrations with LeaseManager.ddl(Database."
                  + dialect.product().toUpperCase(Locale.ROOT)
                  + ", \""
                  + table
                  + "\")",
              e);
        }
        if (!c.getAutoCommit()) {
          c.commit();
        }
      }
      try {
        dialect.checkColumns(c); // a missing or foreign table, before what the version needs
        dialect.resolve(c);
        checkOrUpgrade(c, dialect, createTable);
      } catch (SQLException e) {
        if (dialect.isMissingTable(e)) {
          throw new LeaseException(missingTable(dialect), e);
        }
        List<String> upgrade = dialect.upgrade(e);
        if (!upgrade.isEmpty()) {
          throw new LeaseException(
              "lease table "
                  + table
                  + " was created by an earlier version and must be upgraded before this one can"
                  + " fence with it: run "
                  + String.join("; ", upgrade)
                  + " (createTableIfMissing() does it for you); "
                  + e.getMessage(),
              e);
        }
        // the table exists but is not a lease table of this shape: not a connection problem
        throw new LeaseException(
            "lease table "
                + table
                + " cannot be used as a lease table on "
                + dialect.product()
                + " ("
                + e.getMessage()
                + "); it needs the columns of"
                + " LeaseManager.ddl(Database."
                + dialect.product().toUpperCase(Locale.ROOT)
                + ", \""
                + table
                + "\"): migrate it, or choose another table with .table(...)",
            e);
      } finally {
        if (!c.getAutoCommit()) {
          c.rollback();
        }
      }
    } catch (SQLException e) {
      throw new LeaseException(
          "cannot reach the lease database ("
              + e.getMessage()
              + "); check that it is running and that the DataSource's URL, user and password are"
              + " right",
          e);
    }
    return dialect;
  }

  /**
   * Lease SQL must not run through lease-jdbc's fence (issue 40 item 3): the manager's claims and
   * renewals are not the application's writes, and a claim made on a thread with a lease bound
   * would be fenced under that lease. Refuses a {@code FencedDataSource} (or a DataSource wrapping
   * one), and, once {@code c} is open, a DataSource that hands out fenced connections (a pool over
   * a {@code jdbc:fenced:} URL). Looked up by name: lease-core does not depend on lease-jdbc, and
   * without it on the class path nothing can be fenced.
   */
  static void refuseFenced(DataSource dataSource, Connection c) {
    String fix =
        ": lease SQL (claims, renewals) must not run through the fence. Build the LeaseManager on"
            + " the plain pool (for FencedDataSource.wrap(pool), the pool itself:"
            + " FencedDataSource.target()) and give the fenced DataSource to the application's"
            + " code; a pool configured with a jdbc:fenced: URL is fenced itself, so give the"
            + " LeaseManager a second pool (or a plain DataSource) over the same database with the"
            + " plain jdbc: URL";
    if (c == null) {
      if (wraps(dataSource, "dev.lease.jdbc.FencedDataSource")) {
        throw new IllegalArgumentException(
            "LeaseManager.builder(dataSource) got a fenced DataSource ("
                + dataSource.getClass().getName()
                + ")"
                + fix);
      }
    } else if (wraps(c, "dev.lease.jdbc.FencedConnection")) {
      throw new IllegalArgumentException(
          "the DataSource given to LeaseManager.builder ("
              + dataSource.getClass().getName()
              + ") hands out fenced connections"
              + fix);
    }
  }

  private static boolean wraps(java.sql.Wrapper object, String className) {
    Class<?> type;
    try {
      type = Class.forName(className, false, LeaseTable.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      return false; // lease-jdbc is not there: nothing is fenced
    }
    try {
      return type.isInstance(object) || object.isWrapperFor(type);
    } catch (SQLException | RuntimeException | AbstractMethodError e) {
      return false; // a wrapper that cannot answer: take it as it is
    }
  }

  /**
   * The table check; a table of an earlier version that the dialect can upgrade ({@link
   * Dialect#upgrade}) is upgraded first when the builder creates tables, else the check's error
   * stands (and {@link #open} says which statements to run).
   */
  private static void checkOrUpgrade(Connection c, Dialect dialect, boolean createTable)
      throws SQLException {
    try {
      dialect.checkTable(c);
    } catch (SQLException e) {
      List<String> upgrade = dialect.upgrade(e);
      if (!createTable || upgrade.isEmpty()) {
        throw e;
      }
      if (!c.getAutoCommit()) {
        c.rollback();
      }
      try (Statement s = c.createStatement()) {
        for (String ddl : upgrade) {
          s.execute(ddl);
        }
      }
      dialect.checkTable(c);
    }
  }

  /**
   * A read-only server: PostgreSQL {@code 25006} (a standby, a read-only transaction),
   * MySQL/MariaDB 1290 ({@code --read-only}) and 1836 ({@code super_read_only}).
   */
  private static boolean readOnly(SQLException e) {
    return "25006".equals(e.getSQLState()) || e.getErrorCode() == 1290 || e.getErrorCode() == 1836;
  }

  static String missingTable(Dialect dialect) {
    String table = dialect.table();
    return "lease table "
        + table
        + " does not exist in this "
        + dialect.product()
        + " database; create it with LeaseManager.builder(...).createTableIfMissing(), or apply"
        + " LeaseManager.ddl(Database."
        + dialect.product().toUpperCase(Locale.ROOT)
        + ", \""
        + table
        + "\") in your migrations (the DDL is also in docs/leases.md)";
  }
}
