package dev.lease.conformance.runner;

import dev.lease.conformance.Target;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * Checks the target before anything runs, so bad input ends in one clear message: the database is
 * reachable, supported, and the user may create (and drop) tables.
 */
final class Preflight {

  /** Bad input: the message says what happened and what to do. */
  static final class BadInput extends Exception {
    BadInput(String message) {
      super(message);
    }
  }

  private Preflight() {}

  static void check(Target target) throws BadInput {
    DriverManager.setLoginTimeout(15);
    try (Connection c = target.connect()) {
      c.isValid(5);
    } catch (SQLException e) {
      if (e.getMessage() != null && e.getMessage().startsWith("No suitable driver")) {
        throw new BadInput(
            "no JDBC driver in this jar accepts "
                + target.url()
                + "; use a URL"
                + " that starts with jdbc:postgresql:, jdbc:mysql:, jdbc:mariadb: or jdbc:sqlite:");
      }
      throw new BadInput(
          "cannot connect to "
              + target
              + ": "
              + e.getMessage()
              + "\nCheck that the"
              + " database is running and that --url, --user and --password (or LEASE_URL, LEASE_USER,"
              + " LEASE_PASSWORD) are right.");
    }
    // lease-core decides what is supported; it answers before it looks for the (missing) table
    String probe = target.newTable("probe");
    try {
      LeaseManager.builder(target.dataSource())
          .table(probe)
          .instance("conformance-preflight")
          .build()
          .close();
    } catch (LeaseException e) {
      if (e.getCause() == null) {
        throw new BadInput(
            "unsupported database: "
                + e.getMessage()
                + "\nPoint --url at"
                + " PostgreSQL, MySQL, MariaDB or SQLite.");
      }
      // the probe table does not exist yet: expected
    }
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + probe + " (id INTEGER NOT NULL PRIMARY KEY)");
      s.execute("DROP TABLE " + probe);
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      throw new BadInput(
          "the user may not create tables in "
              + target
              + ": "
              + e.getMessage()
              + "\nThe conformance run creates its own tables (prefix "
              + target.tablePrefix()
              + ") and drops them when it ends; run it as a user with CREATE and DROP on this"
              + " database or schema.");
    }
  }

  /** Drops every table of this run that a property left behind (after a crash, say). */
  /** The server's product and version, for a report; "unknown" when it cannot be asked. */
  static String serverVersion(Target target) {
    try (Connection c = target.connect()) {
      DatabaseMetaData md = c.getMetaData();
      return md.getDatabaseProductName() + " " + md.getDatabaseProductVersion();
    } catch (SQLException e) {
      return "unknown";
    }
  }

  static List<String> sweep(Target target) {
    List<String> dropped = new ArrayList<>();
    try (Connection c = target.connect()) {
      DatabaseMetaData md = c.getMetaData();
      List<String> found = new ArrayList<>();
      try (ResultSet rs =
          md.getTables(c.getCatalog(), null, target.tablePrefix() + "%", new String[] {"TABLE"})) {
        while (rs.next()) {
          String name = rs.getString("TABLE_NAME");
          if (name != null && name.toLowerCase().startsWith(target.tablePrefix())) {
            found.add(name);
          }
        }
      }
      try (Statement s = c.createStatement()) {
        for (String t : found) {
          s.execute("DROP TABLE IF EXISTS " + t);
          dropped.add(t);
        }
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      // nothing reachable to sweep
    }
    return dropped;
  }
}
