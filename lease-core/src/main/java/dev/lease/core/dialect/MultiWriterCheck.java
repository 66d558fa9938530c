package dev.lease.core.dialect;

import dev.lease.core.LeaseException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Refuses MySQL/MariaDB clusters where every node takes writes. STRICT fencing rests on the claim
 * of term t+1 waiting for the share lock a verified transaction of term t holds on the lease row;
 * Galera (MariaDB Galera Cluster, Percona XtraDB Cluster) and MySQL Group Replication in
 * multi-primary mode certify write sets at commit instead of holding locks across nodes, so a claim
 * on one node does not wait for a verified transaction on another, and both commit. A
 * single-primary group, or a primary with replicas, keeps one writer and is fine.
 */
final class MultiWriterCheck {

  private MultiWriterCheck() {}

  /** The server variables the check reads; a server that lacks one does not run that cluster. */
  static final String QUERY =
      "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('wsrep_on',"
          + " 'group_replication_single_primary_mode', 'group_replication_group_name')";

  /**
   * Why the server with these global variables (name to value, as {@code SHOW GLOBAL VARIABLES}
   * gives them) cannot hold STRICT's ordering, or empty when it can.
   */
  static Optional<String> problem(Map<String, String> variables) {
    Map<String, String> v = new HashMap<>();
    variables.forEach((k, val) -> v.put(k.toLowerCase(Locale.ROOT), val == null ? "" : val));
    if (isOn(v.get("wsrep_on"))) {
      return Optional.of(
          "this server is a Galera cluster node (wsrep_on=ON): every node takes writes and"
              + " certifies them at commit instead of holding the lease row's locks across nodes, so"
              + " a claim on one node does not wait for a verified transaction on another and"
              + " STRICT fencing cannot hold. Point the lease manager and the fenced data at one"
              + " node only (a single writer, for example through a proxy that sends all writes to"
              + " one node), or use a primary with replicas");
    }
    String group = v.getOrDefault("group_replication_group_name", "");
    String single = v.get("group_replication_single_primary_mode");
    if (!group.isBlank() && single != null && !isOn(single)) {
      return Optional.of(
          "this server is in a MySQL Group Replication group in multi-primary mode"
              + " (group_replication_single_primary_mode=OFF): members certify write sets at commit"
              + " instead of holding the lease row's locks across members, so STRICT fencing cannot"
              + " hold. Run the group in single-primary mode, or write leases and fenced data"
              + " through one member only");
    }
    return Optional.empty();
  }

  private static boolean isOn(String value) {
    return value != null && (value.equalsIgnoreCase("ON") || value.equals("1"));
  }

  /**
   * Reads the variables on {@code c} and throws when the server is a multi-writer cluster node.
   *
   * @throws LeaseException naming the cluster kind and what to do instead
   */
  static void refuseMultiWriter(Connection c, String product) throws SQLException {
    Map<String, String> variables = new HashMap<>();
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(QUERY)) {
      while (rs.next()) {
        variables.put(rs.getString(1), rs.getString(2));
      }
    }
    if (!c.getAutoCommit()) {
      c.rollback();
    }
    Optional<String> problem = problem(variables);
    if (problem.isPresent()) {
      throw new LeaseException(product + ": " + problem.get());
    }
  }
}
