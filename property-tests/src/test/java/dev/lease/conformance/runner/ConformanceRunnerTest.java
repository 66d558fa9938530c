package dev.lease.conformance.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The runner as a user meets it: the JUnit Platform Launcher path, the table, the exit status, the
 * embedded SQLite directory removed, no tables left behind, and one clear message for bad input.
 * (The properties themselves are tested on every database by their own test classes.)
 */
class ConformanceRunnerTest {

  private static final Pattern TEMP_DIR = Pattern.compile("embedded SQLite in (\\S+)\\)");
  private static final Pattern PREFIX = Pattern.compile("tables (lc_[0-9a-f]{6}_)\\*");

  record Run(int exit, String out, String err) {}

  private static Run run(String... args) {
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

  @Test
  void withoutArgumentsItRunsOnEmbeddedSqliteAndRemovesTheDatabase() {
    Run r = run("--only", "paused-holder", "--seed", "5");
    assertEquals(Main.HOLDS, r.exit, r.err);
    assertTrue(r.out.contains("paused-holder    sqlite"), r.out);
    assertTrue(r.out.contains("every property holds (seed 5)"), r.out);
    Matcher m = TEMP_DIR.matcher(r.out);
    assertTrue(m.find(), r.out);
    assertFalse(Files.exists(Path.of(m.group(1))), "the embedded database must be removed");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void againstADatabaseItLeavesNoTableBehind(TestDatabase db) throws Exception {
    String url = db.url();
    Run r = run("--url", url, "--only", "paused-holder");
    assertEquals(Main.HOLDS, r.exit, r.err);
    assertTrue(r.out.contains("paused-holder    " + db), r.out);
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
