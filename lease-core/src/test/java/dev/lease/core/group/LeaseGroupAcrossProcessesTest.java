package dev.lease.core.group;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Fixture;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * Members in separate JVMs ({@link GroupMemberMain}) and one in this JVM share the keys; one child
 * is killed (destroyForcibly: no release, no goodbye), the other closes its group. The database
 * decides: every key with one live holder, fair shares, and no key acquired twice in one term.
 */
class LeaseGroupAcrossProcessesTest {

  static final LeaseTimings TIMINGS = Fixture.timings(1500, 400, 1100, 800, 100);
  static final int KEYS = 90;

  static LeaseGroup group(LeaseManager manager, int keys, DataSource ds, String acquisitions) {
    return LeaseGroup.builder(manager, "across")
        .keys(() -> GroupMemberMain.keys(keys))
        .passInterval(GroupMemberMain.pass())
        .createTableIfMissing()
        .callbacks(
            new GroupCallbacks() {
              @Override
              public void onAcquired(String key, Lease lease) {
                GroupMemberMain.record(ds, acquisitions, key, lease);
              }

              @Override
              public void onReleasing(String key) {}

              @Override
              public void onLost(String key) {}
            })
        .build();
  }

  @OnEveryDatabase
  void membersInSeparateJvmsShareKeysThroughAKillAndAClose(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      String acquisitions = f.table + "_acq";
      try (Connection c = f.admin.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "CREATE TABLE "
                + acquisitions
                + " (k varchar(64) NOT NULL, term bigint NOT NULL, instance varchar(64) NOT NULL)");
        if (!c.getAutoCommit()) {
          c.commit();
        }
      }
      String url = db.isSqlite() ? sqliteFile(f) : db.url();
      List<Process> children = new ArrayList<>();
      try {
        children.add(launch(db, url, f.table, acquisitions, "child-1"));
        children.add(launch(db, url, f.table, acquisitions, "child-2"));
        LeaseManager manager = f.manager(f.pool(4), "here", TIMINGS);
        String clock = LeaseInternals.dialect(manager).clock();
        LeaseGroup here = f.track(group(manager, KEYS, f.pool(2), acquisitions));
        // start here once the children announced themselves, so it does not take every key first
        // and shed them again at its next pass
        Fixture.await("the children's heartbeats", Duration.ofSeconds(30), () -> members(f) >= 2);
        here.start();
        awaitFair(
            f,
            clock,
            acquisitions,
            List.of("child-1", "child-2", "here"),
            "three members in three JVMs");

        long killedAt = System.nanoTime();
        children.get(1).destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        awaitFair(f, clock, acquisitions, List.of("child-1", "here"), "child-2 was killed");
        System.out.printf(
            "%s: a killed JVM's keys were taken within %d ms (lease %d ms)%n",
            db, (System.nanoTime() - killedAt) / 1_000_000, TIMINGS.leaseDuration().toMillis());

        children.get(0).getOutputStream().close(); // child-1 closes its group: hands over at once
        assertTrue(children.get(0).waitFor(20, TimeUnit.SECONDS), "child-1 exited");
        awaitFair(f, clock, acquisitions, List.of("here"), "child-1 closed its group");
        here.close();
        assertEquals(0, liveHolders(f, clock).size(), "closing the last member released every key");

        Map<String, String> holderOfTerm = new HashMap<>();
        try (Connection c = f.admin.getConnection();
            Statement s = c.createStatement();
            ResultSet rs = s.executeQuery("SELECT k, term, instance FROM " + acquisitions)) {
          while (rs.next()) {
            String before =
                holderOfTerm.put(rs.getString(1) + "@" + rs.getLong(2), rs.getString(3));
            assertTrue(
                before == null,
                rs.getString(1)
                    + " term "
                    + rs.getLong(2)
                    + " acquired by "
                    + before
                    + " and "
                    + rs.getString(3));
          }
        }
        // at least: every key once, the killed member's third again, the closed member's half
        // again (more when the first passes overlapped and keys were shed)
        int least = KEYS + KEYS / 3 + KEYS / 2;
        assertTrue(holderOfTerm.size() >= least, "keys changed hands: " + holderOfTerm.size());
      } finally {
        for (Process p : children) {
          p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        TestDatabase.dropQuietly(f.admin, acquisitions, f.table + "_members");
      }
    }
  }

  /** Waits until the database has every key live, held only by {@code members}, each fairly. */
  private static void awaitFair(
      Fixture f, String clock, String acquisitions, List<String> members, String after) {
    Fixture.await(
        "the fair share among " + members + " after " + after,
        Duration.ofSeconds(30),
        () -> {
          Map<String, String> live = liveHolders(f, clock);
          if (live.size() != KEYS) {
            return false;
          }
          // and every holder has seen onAcquired for its keys: a claim is in the database before
          // its member's callbacks run, and a member killed in between would leave them unrecorded
          if (unrecorded(f, clock, acquisitions) > 0) {
            return false;
          }
          Map<String, Integer> counts = new HashMap<>();
          live.values().forEach(i -> counts.merge(i, 1, Integer::sum));
          int m = members.size();
          return counts.keySet().stream().allMatch(members::contains)
              && counts.values().stream()
                  .allMatch(n -> n <= (KEYS + m - 1) / m && n >= KEYS / m - 1);
        });
  }

  /** Live (key, term) pairs whose holder has not recorded its acquisition yet. */
  private static int unrecorded(Fixture f, String clock, String acquisitions) {
    return f.query(
        "SELECT COUNT(*) FROM "
            + f.table
            + " t WHERE t.expires_at_ms > "
            + clock
            + " AND NOT EXISTS (SELECT 1 FROM "
            + acquisitions
            + " a WHERE a.k = t.name AND a.term = t.term)",
        rs -> {
          rs.next();
          return rs.getInt(1);
        });
  }

  private static int members(Fixture f) {
    try (Connection c = f.admin.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + f.table + "_members")) {
      rs.next();
      int n = rs.getInt(1);
      if (!c.getAutoCommit()) {
        c.commit();
      }
      return n;
    } catch (SQLException e) {
      return 0; // the children create the table
    }
  }

  /** The live holder of each key by the database clock ({@code clock}, the dialect's). */
  private static Map<String, String> liveHolders(Fixture f, String clock) {
    return f.liveHolders(clock);
  }

  private static String sqliteFile(Fixture f) throws SQLException {
    try (Connection c = f.admin.getConnection()) {
      String url = c.getMetaData().getURL();
      return url.substring("jdbc:sqlite:".length());
    }
  }

  private static Process launch(
      TestDatabase db, String url, String table, String acquisitions, String name)
      throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    // surefire may put only its booter jar on java.class.path; it passes the real one here
    String cp =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> cmd =
        List.of(
            java,
            "-cp",
            cp,
            "-Dorg.slf4j.simpleLogger.defaultLogLevel="
                + System.getProperty("lease.test.childLogLevel", "warn"),
            GroupMemberMain.class.getName(),
            db.toString(),
            url,
            table,
            acquisitions,
            Integer.toString(KEYS),
            name);
    File log = Files.createTempFile("lease-group-" + name + "-", ".log").toFile();
    if (!Boolean.getBoolean("lease.test.keepLogs")) {
      log.deleteOnExit();
    }
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
  }
}
