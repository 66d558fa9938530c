package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Issue 23: {@link LeaseManager#closeOnShutdown()}. A process whose {@code main} returns without
 * {@code close()} hands its lease back at exit when the hook is installed; negative control:
 * without it, the row stays live in the database after the process is gone.
 */
class ManagerShutdownHookTest {

  @OnEveryDatabase
  void aProcessThatReturnsFromMainReleasesItsLeaseThroughTheHook(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertEquals(0, runChild(f, db, "hook"));
      Fixture.Row row = f.row("main-lease");
      assertNotNull(row, db + ": the child claimed");
      assertEquals(0, row.expiresAtMs(), db + ": released at exit");
    }
  }

  /** Negative control: no hook, and the lease outlives its process. */
  @OnEveryDatabase
  void negativeControlWithoutTheHookTheLeaseStaysLive(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertEquals(0, runChild(f, db, "none"));
      LeaseManager m = f.manager("probe", LeaseTimings.DEFAULTS);
      assertTrue(f.row("main-lease").expiresAtMs() > m.databaseTimeMillis(), db + ": still live");
    }
  }

  @OnEveryDatabase
  void theHookIsInstalledOnceAndTakenBackByClose(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = f.manager("a", LeaseTimings.DEFAULTS);
      Thread hook = m.closeOnShutdown();
      assertSame(hook, m.closeOnShutdown(), db + ": idempotent");
      m.close();
      assertFalse(Runtime.getRuntime().removeShutdownHook(hook), db + ": close took it back");
    }
  }

  private static int runChild(Fixture f, TestDatabase db, String mode) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String cp =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    String file = "-";
    if (db.isSqlite()) {
      try (var c = f.admin.getConnection()) {
        file = c.getMetaData().getURL().substring("jdbc:sqlite:".length());
      }
    }
    Process p =
        new ProcessBuilder(
                List.of(
                    java,
                    "-cp",
                    cp,
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                    ShutdownHookMain.class.getName(),
                    db.name(),
                    file,
                    f.table,
                    mode))
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes());
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), db + ": the child exited");
    assertTrue(out.contains("claimed"), db + ": " + out);
    return p.exitValue();
  }
}
