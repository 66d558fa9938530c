package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * Keeps docs/leases.md's first example true: the code between the markers below is the README's
 * snippet, character for character (checked), it compiles (this class), and it runs on SQLite; the
 * README's DDL is what {@link LeaseManager#ddl(Database, String)} prints.
 */
class ReadmeExampleTest {

  private static final List<String> events = new CopyOnWriteArrayList<>();

  private static void runBilling() {
    events.add("billing ran");
  }

  private static void processPartition(int partition, long fencingToken) {
    events.add("partition " + partition + " under term " + fencingToken);
  }

  /** The README's snippet; the failure policy is a parameter so tests never halt the JVM. */
  static boolean example(DataSource dataSource, FailurePolicy onStuckWork) throws Exception {
    // spotless:off
    // README-BEGIN
    LeaseManager leases = LeaseManager.builder(dataSource) // the database that holds the leases
        .table("leases")
        .instance("billing-1")          // names this process in the lease row, for humans
        .failurePolicy(onStuckWork)     // default: halt the process when lost work will not stop
        .createTableIfMissing()         // or apply LeaseManager.ddl(...) in your migrations
        .build();

    // The one-call runner: claim, keep renewed, run, release; false if another process holds it.
    boolean ran = leases.runIfFree("nightly-billing", lease -> {
      runBilling();                     // interrupted if the lease is lost or released
      return null;
    });

    // Or claim once without waiting, and hold the lease yourself.
    Optional<Lease> claimed = leases.tryClaim("partition-17");
    if (claimed.isPresent()) {
      try (Lease lease = claimed.get().hold();                    // renewed in the background
          LeaseContext.Scope scope = LeaseContext.bind(lease)) {  // bound to this thread
        long fencingToken = LeaseContext.currentTerm().orElseThrow();
        processPartition(17, fencingToken);
      }                                                           // unbound, then released
    }
    leases.close();                     // at shutdown: stops the work under its leases, then releases
    // README-END
    // spotless:on
    return ran;
  }

  @Test
  void readmeSnippetRunsOnSqlite() throws Exception {
    events.clear();
    DataSource sqlite = TestDatabase.SQLITE.unpooled();
    List<String> stuck = new CopyOnWriteArrayList<>();
    assertTrue(example(sqlite, (lease, worker) -> stuck.add(lease.name())));
    assertEquals(2, events.size(), events.toString());
    assertEquals("billing ran", events.get(0));
    long term = Long.parseLong(events.get(1).substring("partition 17 under term ".length()));
    assertTrue(
        term > 1_000_000_000_000_000L, "a new row's term starts at the database clock in µs");
    assertTrue(stuck.isEmpty());
    try (Connection c = sqlite.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT name, term, expires_at_ms FROM leases ORDER BY name")) {
      assertTrue(rs.next());
      assertEquals("nightly-billing", rs.getString(1));
      assertEquals(0, rs.getLong(3), "released");
      assertTrue(rs.next());
      assertEquals("partition-17", rs.getString(1));
      assertEquals(0, rs.getLong(3), "released");
    }
    assertTrue(LeaseContext.current().isEmpty());
  }

  @Test
  void readmeShowsExactlyTheSnippet() throws IOException {
    String source =
        Files.readString(Path.of("src/test/java/dev/lease/core/ReadmeExampleTest.java"));
    int begin = source.indexOf("// README-BEGIN\n") + "// README-BEGIN\n".length();
    int end = source.indexOf("    // README-END", begin);
    String snippet =
        source
            .substring(begin, end)
            .lines()
            .map(l -> l.length() >= 4 ? l.substring(4) : l.strip())
            .collect(Collectors.joining("\n", "", "\n"));
    // docs/leases.md shows it (the front page has complete classes, compiled by DocSnippetsTest)
    for (String page : List.of("../docs/leases.md")) {
      assertTrue(
          Files.readString(Path.of(page)).contains("```java\n" + snippet + "```"),
          page + " must show the snippet of ReadmeExampleTest exactly:\n" + snippet);
    }
  }

  @Test
  void readmeShowsTheDdlOfEveryDatabase() throws IOException, SQLException {
    String readme = withoutWhitespace(readme());
    for (Database db : Database.values()) {
      for (String ddl : LeaseManager.ddl(db, "leases")) {
        assertTrue(
            readme.contains(withoutWhitespace(ddl) + ";"),
            "docs/leases.md shows the DDL of " + db + ": " + ddl);
      }
    }
  }

  /** The page with the lease table's DDL ("The lease table"). */
  private static String readme() throws IOException {
    return Files.readString(Path.of("../docs/leases.md"));
  }

  private static String withoutWhitespace(String s) {
    return s.replaceAll("\\s+", "");
  }
}
