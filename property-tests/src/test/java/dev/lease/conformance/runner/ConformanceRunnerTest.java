package dev.lease.conformance.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runner as a user meets it: the JUnit Platform Launcher path, the table, the exit status, the
 * embedded SQLite directory removed, no tables left behind, and one clear message for bad input.
 * (The properties themselves are tested on every database by their own test classes.)
 */
class ConformanceRunnerTest {

  private static final Pattern TEMP_DIR = Pattern.compile("embedded SQLite in (\\S+)\\)");
  private static final Pattern PREFIX = Pattern.compile("tables (lc_[0-9a-f]{6}_)\\*");

  record Run(int exit, String out, String err) {}

  static Run run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit =
        Main.run(
            args,
            Map.of(),
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    Run r =
        new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    System.out.println(r.out + r.err);
    return r;
  }

  /** The main job exactly as the README runs it: no arguments, every property, embedded SQLite. */
  @Test
  @DisplayName("the default run (the main job) holds on embedded sqlite")
  void theDefaultRunChecksEveryPropertyOnEmbeddedSqliteAndEveryOneHolds() {
    Run r = run();
    assertEquals(Main.HOLDS, r.exit, r.out + r.err);
    for (String id : List.of("model", "simulation", "fault-run", "paused-holder")) {
      Matcher row = Pattern.compile("(?m)^" + id + " +(\\S.*?) {2,}holds ").matcher(r.out);
      assertTrue(row.find(), id + " must hold:\n" + r.out);
    }
    // the counts each property had to observe, printed under its row
    assertTrue(
        r.out.contains(
            "claims that waited for a verified transaction of a holder frozen past its lease: "),
        r.out);
    assertTrue(
        r.out.contains("rounds whose claim waited for the paused verified transaction past the"),
        r.out);
    assertTrue(r.out.contains("(needs "), r.out);
    assertTrue(r.out.contains("transactions refused by the database: "), r.out);
    assertTrue(r.out.contains("statements cancelled by a loss: "), r.out);
    assertTrue(r.out.contains("database clock steps back: "), r.out);
    assertFalse(r.out.contains("!!"), "every required count met:\n" + r.out);
    assertTrue(r.out.contains("durations measured by this run: model "), r.out);
    assertTrue(r.out.contains("every property holds (seed "), r.out);
    // read by people and by scripts: no terminal escape codes, and one short line per property
    assertFalse((r.out + r.err).contains("\u001b"), "an escape code in the output:\n" + r.out);
    Matcher heading = Pattern.compile("(?m)^\\[[a-z-]+\\] .*$").matcher(r.out);
    int headings = 0;
    while (heading.find()) {
      headings++;
      assertTrue(heading.group().length() <= 130, "a long heading: " + heading.group());
    }
    assertEquals(Options.propertyIds().size() - 1, headings, r.out);
    // four at a time, each on its own database file, yet printed in the suite's order
    assertTrue(r.out.contains(", 4 at a time (each on its own embedded SQLite in "), r.out);
    int block = -1;
    int row = -1;
    for (String id : Options.propertyIds().subList(0, Options.propertyIds().size() - 1)) {
      int b = r.out.indexOf("\n[" + id + "] ");
      int t = r.out.indexOf("\n" + id + " ", r.out.indexOf("\nproperty "));
      assertTrue(b > block && t > row, id + " out of order:\n" + r.out);
      block = b;
      row = t;
    }
    Matcher m = TEMP_DIR.matcher(r.out);
    assertTrue(m.find(), r.out);
    assertFalse(Files.exists(Path.of(m.group(1))), "the embedded database must be removed");
  }

  /**
   * --controls on the embedded database, through the runner: a virtual-time control and a
   * database-backed one caught, VERIFY's n/a on SQLite (every control on every database has its own
   * test: FaultRunNegativeControlTest, PausedHolderPropertyTest, Model- and
   * SimulationNegativeControlTest).
   */
  @Test
  @DisplayName("--controls: caught on embedded sqlite, VERIFY's n/a there")
  void theControlsAreCaughtOnEmbeddedSqlite() {
    Run r =
        run(
            "--controls",
            "--seed",
            "3",
            "--only",
            "model/claim-ignores-expiry,paused-holder,fault-run/verify");
    assertEquals(Main.HOLDS, r.exit, r.out + r.err);
    assertTrue(r.out.contains("every control was caught (seed 3)"), r.out);
    for (String id : List.of("model/claim-ignores-expiry", "paused-holder/unfenced")) {
      assertTrue(
          Pattern.compile("(?m)^" + Pattern.quote(id) + " +.* caught ").matcher(r.out).find(),
          id + " must be caught:\n" + r.out);
    }
    assertTrue(Pattern.compile("(?m)^fault-run/verify +sqlite +n/a").matcher(r.out).find(), r.out);
    assertTrue(
        Pattern.compile("(?m)^paused-holder/verify +sqlite +n/a").matcher(r.out).find(), r.out);
    assertTrue(r.out.contains("caught: invariant 3: transaction"), r.out);
    assertFalse(r.out.contains("NOT CAUGHT"), r.out);
  }

  /** --controls against a server, where VERIFY's controls apply and are caught. */
  @Test
  @DisplayName("--controls: the VERIFY controls caught on postgresql")
  void theVerifyControlsAreCaughtOnAServer() {
    Run r =
        run(
            "--controls",
            "--url",
            TestDatabase.POSTGRESQL.url(),
            "--only",
            "fault-run/verify,paused-holder/verify");
    assertEquals(Main.HOLDS, r.exit, r.out + r.err);
    assertTrue(
        Pattern.compile("(?m)^fault-run/verify +postgresql +caught").matcher(r.out).find(), r.out);
    assertTrue(
        Pattern.compile("(?m)^paused-holder/verify +postgresql +caught").matcher(r.out).find(),
        r.out);
  }

  @Test
  void anUnknownOrMisspelledIdIsBadInputNamingTheKnownIds() {
    for (String only : List.of("fault_run", "model,fault_run", "nothing", ",")) {
      Run r = run("--only", only);
      assertEquals(Main.BAD_INPUT, r.exit, only + ": " + r.out + r.err);
      assertTrue(
          r.err.contains("the properties are model, simulation, fault-run, paused-holder"), r.err);
      assertEquals("", r.out, "nothing runs on bad input");
    }
    Run typo = run("--only", "model,fault_run");
    assertTrue(typo.err.contains("--only names an unknown id: 'fault_run'"), typo.err);
    Run control = run("--only", "fault-run/verify");
    assertEquals(Main.BAD_INPUT, control.exit);
    assertTrue(control.err.contains("known with --controls"), control.err);
    Run withControls = run("--controls", "--only", "fault-run/verfy");
    assertEquals(Main.BAD_INPUT, withControls.exit);
    assertTrue(
        withControls.err.contains("and the controls model/claim-ignores-expiry"), withControls.err);
  }

  @Test
  @DisplayName("--parallel 1 runs the properties one after another on one embedded sqlite")
  void parallelOneRunsThePropertiesOneAfterAnother() {
    Run r = run("--parallel", "1", "--only", "sql-text-stale,paused-holder", "--seed", "5");
    assertEquals(Main.HOLDS, r.exit, r.out + r.err);
    assertTrue(r.out.contains(", one at a time (embedded SQLite in "), r.out);
    assertTrue(
        Pattern.compile("(?s)\\npaused-holder +sqlite +holds .*\\nsql-text-stale +sqlite +holds ")
            .matcher(r.out)
            .find(),
        r.out);
    assertTrue(r.out.contains("every property holds (seed 5)"), r.out);
  }

  @Test
  void aParallelOfNoneIsBadInput() {
    for (String n : List.of("0", "-1", "many", "65")) {
      Run r = run("--parallel", n);
      assertEquals(Main.BAD_INPUT, r.exit, n + ": " + r.out + r.err);
      assertTrue(r.err.contains("--parallel needs a whole number from 1 to 64"), r.err);
      assertEquals("", r.out, "nothing runs on bad input");
    }
  }

  @Test
  void theHelpNamesEveryExitStatus() {
    Run r = run("--help");
    assertEquals(Main.HOLDS, r.exit);
    assertTrue(r.out.contains("3 a property was inconclusive"), r.out);
    assertTrue(r.out.contains("--controls"), r.out);
    assertTrue(r.out.contains("--parallel N   checks N properties at a time (default 4)"), r.out);
  }

  @OnEveryDatabase
  void theSqlTextPropertiesRunAsPropertiesOfTheirOwnAndLeaveNoTableBehind(TestDatabase db)
      throws Exception {
    String url = db.url();
    Run r = run("--url", url, "--only", "sql-text-stale", "--seed", "7");
    assertEquals(Main.HOLDS, r.exit, r.err + r.out);
    assertTrue(
        Pattern.compile("sql-text-stale\\s+" + db + "\\s+holds").matcher(r.out).find(), r.out);
    Matcher m = PREFIX.matcher(r.out);
    assertTrue(m.find(), r.out);
    assertEquals(List.of(), tablesStartingWith(new UrlDataSource(url), m.group(1)));
  }

  @OnEveryDatabase
  void againstADatabaseItLeavesNoTableBehind(TestDatabase db) throws Exception {
    String url = db.url();
    Run r = run("--url", url, "--only", "paused-holder");
    assertEquals(Main.HOLDS, r.exit, r.out + r.err);
    assertTrue(
        Pattern.compile("(?m)^paused-holder +" + db + " +holds").matcher(r.out).find(), r.out);
    Matcher m = PREFIX.matcher(r.out);
    assertTrue(m.find(), r.out);
    assertEquals(List.of(), tablesStartingWith(new UrlDataSource(url), m.group(1)));
  }

  @Test
  void anUnsupportedDatabaseGetsOneClearMessage() {
    Run r = run("--url", "jdbc:h2:mem:conformance");
    assertEquals(Main.BAD_INPUT, r.exit);
    assertTrue(r.err.contains("unsupported database") && r.err.contains("H2"), r.err);
    assertTrue(r.err.contains("PostgreSQL, MySQL, MariaDB or SQLite"), r.err);
    // lease-core's own message names them with "or" too
    assertTrue(r.err.contains("must live in PostgreSQL, MySQL, MariaDB or SQLite 3.42"), r.err);
    assertEquals("", r.out);
  }

  @Test
  void anUnreachableDatabaseGetsOneClearMessage() {
    Run r = run("--url", "jdbc:postgresql://127.0.0.1:1/test", "--user", "nobody");
    assertEquals(Main.BAD_INPUT, r.exit);
    assertTrue(r.err.contains("cannot connect to postgresql"), r.err);
    assertTrue(r.err.contains("Check that the database is running"), r.err);
  }

  @Test
  void noPermissionToCreateTablesGetsOneClearMessage(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("read-only.db");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE existing (x INTEGER)");
    }
    // open_mode=1 is SQLITE_OPEN_READONLY: the user may read but not create tables
    Run r = run("--url", "jdbc:sqlite:" + file + "?open_mode=1");
    assertEquals(Main.BAD_INPUT, r.exit);
    assertTrue(r.err.contains("may not create tables"), r.err);
    assertTrue(r.err.contains("CREATE and DROP"), r.err);
  }

  @Test
  void aBadArgumentPrintsTheUsage() {
    Run r = run("--colour");
    assertEquals(Main.BAD_INPUT, r.exit);
    assertTrue(r.err.contains("unknown argument --colour") && r.err.contains("usage:"), r.err);
  }

  private static List<String> tablesStartingWith(DataSource ds, String prefix) throws Exception {
    List<String> found = new ArrayList<>();
    try (Connection c = ds.getConnection();
        ResultSet rs =
            c.getMetaData().getTables(c.getCatalog(), null, "%", new String[] {"TABLE"})) {
      while (rs.next()) {
        String name = rs.getString("TABLE_NAME");
        if (name.toLowerCase().startsWith(prefix)) {
          found.add(name);
        }
      }
    }
    return found;
  }
}
