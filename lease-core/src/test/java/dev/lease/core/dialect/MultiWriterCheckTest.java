package dev.lease.core.dialect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.LeaseManager;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Multi-writer clusters are refused at start. No Galera or Group Replication runs here, so the
 * decision is tested on the variables such servers report (the seam: {@link
 * MultiWriterCheck#problem}), and the query that feeds it on the real MySQL/MariaDB servers, which
 * are single writers and must be accepted.
 */
class MultiWriterCheckTest {

  @Test
  void aGaleraNodeIsRefusedWithWhatToDo() {
    String p = MultiWriterCheck.problem(Map.of("wsrep_on", "ON")).orElseThrow();
    assertTrue(p.contains("Galera") && p.contains("wsrep_on=ON"), p);
    assertTrue(p.contains("one node"), p);
  }

  @Test
  void groupReplicationInMultiPrimaryModeIsRefused() {
    String p =
        MultiWriterCheck.problem(
                Map.of(
                    "group_replication_group_name", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
                    "group_replication_single_primary_mode", "OFF"))
            .orElseThrow();
    assertTrue(p.contains("multi-primary") && p.contains("single-primary mode"), p);
  }

  @Test
  void singleWritersAreAccepted() {
    // MariaDB without Galera reports wsrep_on=OFF; a single-primary group; a server with the
    // group replication plugin loaded but in no group; MySQL without either plugin.
    assertFalse(MultiWriterCheck.problem(Map.of("wsrep_on", "OFF")).isPresent());
    assertFalse(
        MultiWriterCheck.problem(
                Map.of(
                    "group_replication_group_name", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
                    "group_replication_single_primary_mode", "ON"))
            .isPresent());
    assertFalse(
        MultiWriterCheck.problem(
                Map.of(
                    "group_replication_group_name", "",
                    "group_replication_single_primary_mode", "OFF"))
            .isPresent());
    assertFalse(MultiWriterCheck.problem(Map.of()).isPresent());
  }

  /**
   * Negative control of the detection's input: the variables as the real servers report them, with
   * wsrep_on switched on, are refused — so the names the query asks for are the names the servers
   * use (a misspelt name would make every server look like a single writer).
   */
  @OnMySqlFamily
  void theRealServersVariablesFeedTheCheck(TestDatabase db) throws Exception {
    Map<String, String> seen = new HashMap<>();
    try (Connection c = db.unpooled().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(MultiWriterCheck.QUERY)) {
      while (rs.next()) {
        seen.put(rs.getString(1), rs.getString(2));
      }
    }
    assertEquals("OFF", seen.get("wsrep_on"), "MariaDB 10.11 reports wsrep_on: " + seen);
    assertFalse(MultiWriterCheck.problem(seen).isPresent());
    Map<String, String> galera = new HashMap<>(seen);
    galera.put("wsrep_on", "ON");
    assertTrue(MultiWriterCheck.problem(galera).isPresent());
    // and a lease manager starts on the single writer
    String table = TestDatabase.uniqueTable("mw");
    try (LeaseManager m =
        LeaseManager.builder(db.unpooled()).table(table).createTableIfMissing().build()) {
      assertTrue(m.tryClaim("mw").isPresent());
    } finally {
      TestDatabase.dropQuietly(db.unpooled(), table);
    }
  }
}
