package dev.lease.core;

import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import javax.sql.DataSource;

/**
 * A process that claims a lease, keeps it renewed and returns from {@code main} without closing its
 * manager ({@link ManagerShutdownHookTest}). Arguments: database, SQLite file (or "-"), table,
 * "hook" to install {@link LeaseManager#closeOnShutdown()} or "none".
 */
public final class ShutdownHookMain {

  private ShutdownHookMain() {}

  public static void main(String[] args) {
    TestDatabase db = TestDatabase.valueOf(args[0].toUpperCase(java.util.Locale.ROOT));
    DataSource ds =
        db.isSqlite() ? TestDatabase.sqliteDataSource(args[1]) : new UrlDataSource(db.url());
    LeaseManager manager =
        LeaseManager.builder(ds)
            .table(args[2])
            .instance("child")
            .failurePolicy(FailurePolicy.logOnly())
            .build();
    if (args[3].equals("hook")) {
      manager.closeOnShutdown();
    }
    manager.tryClaim("main-lease").orElseThrow().hold();
    System.out.println("claimed");
    // main returns: the manager's threads are daemons, so the JVM exits now
  }
}
