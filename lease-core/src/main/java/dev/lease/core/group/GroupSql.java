package dev.lease.core.group;

import dev.lease.core.Database;
import dev.lease.core.dialect.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The SQL of a {@link LeaseGroup} for one database: the members table, and the batched statements
 * on the ordinary lease table. The lease rows follow the lease table's rules exactly (those of
 * {@link Dialect}): a new row starts expired at the term {@code database clock ms × 1000} (terms
 * never repeat, even after a row is deleted); a claim sets a new holder and {@code term + 1} only
 * where the row is expired by the database clock; every statement reads the database clock inside
 * itself. No user value is concatenated into SQL: the table names are validated identifiers, keys
 * and group names are bound.
 */
abstract class GroupSql {

  /** How many keys one statement carries (the IN lists hold only placeholders). */
  static final int MAX_KEYS_PER_STATEMENT = 1000;

  static final int GROUP_WIDTH = Dialect.NAME_WIDTH;

  /** The lease table. */
  final String table;

  /** The members table. */
  final String members;

  /** The database clock, UTC epoch ms (the dialect's expression). */
  final String clock;

  /** The lock clause of the claim's read; empty only in the negative control of the tests. */
  final String rowLock;

  GroupSql(Dialect dialect, String members, boolean unlocked) {
    this.table = dialect.table();
    this.members = members;
    this.clock = dialect.clock();
    this.rowLock = unlocked ? "" : " FOR UPDATE SKIP LOCKED";
  }

  static GroupSql of(Dialect dialect, String members, boolean unlocked) {
    return switch (dialect.product()) {
      case "PostgreSQL" -> new PostgresGroupSql(dialect, members, unlocked);
      case "MySQL", "MariaDB" -> new MySqlGroupSql(dialect, members, unlocked);
      case "SQLite" -> new SqliteGroupSql(dialect, members, unlocked);
      default -> throw new IllegalStateException("no LeaseGroup SQL for " + dialect.product());
    };
  }

  static List<String> ddl(Database database, String members) {
    return switch (database) {
      case POSTGRESQL -> PostgresGroupSql.membersDdl(members);
      case MYSQL, MARIADB -> MySqlGroupSql.membersDdl(members);
      case SQLITE -> SqliteGroupSql.membersDdl(members);
    };
  }

  abstract List<String> ddl();

  /** Writes this member's heartbeat (database clock) and draining flag; creates its row once. */
  abstract void heartbeat(
      Connection c, String group, String member, String instance, boolean draining)
      throws SQLException;

  /**
   * Creates the lease rows of {@code keys} that do not exist, expired, at the start term; one
   * statement. Rows that exist are left alone.
   */
  abstract void createRows(Connection c, List<String> keys) throws SQLException;

  /**
   * Claims up to {@code limit} of {@code keys} that are free or expired by the database clock, for
   * {@code holder}: term + 1 each. Returns the claimed keys and their new terms.
   */
  abstract Map<String, Long> claim(
      Connection c, List<String> keys, int limit, String holder, String instance, long leaseMs)
      throws SQLException;

  /** Live (heartbeat within {@code timeoutMs} of the database clock) members not draining. */
  int liveMembers(Connection c, String group, long timeoutMs) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT COUNT(*) FROM "
                + members
                + " WHERE group_name = ? AND draining = 0 AND heartbeat_ms > "
                + clock
                + " - ?")) {
      ps.setString(1, group);
      ps.setLong(2, timeoutMs);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  /** Deletes the rows of members whose heartbeat is older than {@code olderThanMs}. */
  int forgetDead(Connection c, String group, long olderThanMs) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "DELETE FROM "
                + members
                + " WHERE group_name = ? AND heartbeat_ms < "
                + clock
                + " - ?")) {
      ps.setString(1, group);
      ps.setLong(2, olderThanMs);
      return ps.executeUpdate();
    }
  }

  /** Deletes this member's row (a closing group: its peers stop counting it at once). */
  void deleteMember(Connection c, String group, String member) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("DELETE FROM " + members + " WHERE group_name = ? AND member = ?")) {
      ps.setString(1, group);
      ps.setString(2, member);
      ps.executeUpdate();
    }
  }

  /**
   * Gives back the rows of {@code keys} still claimed by {@code holder}: the claims of a batch
   * whose attempt timed out on this side and may have committed anyway (nobody holds them). The
   * holder token is minted per batch and never reused, so this can only touch that batch's claims.
   */
  int releaseBatch(Connection c, List<String> keys, String holder) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE "
                + table
                + " SET expires_at_ms = 0, revision = revision + 1 WHERE holder = ? AND name IN ("
                + marks(keys)
                + ")")) {
      ps.setString(1, holder);
      bind(ps, 2, keys);
      return ps.executeUpdate();
    }
  }

  /** Which of {@code keys} have a lease row; one statement. */
  Set<String> existing(Connection c, List<String> keys) throws SQLException {
    Set<String> found = new HashSet<>();
    try (PreparedStatement ps =
        c.prepareStatement("SELECT name FROM " + table + " WHERE name IN (" + marks(keys) + ")")) {
      bind(ps, 1, keys);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          found.add(rs.getString(1));
        }
      }
    }
    return found;
  }

  /** The start term of a new row: database clock ms × 1000, as the lease table's create does. */
  final String startTerm() {
    return "(" + clock + ") * 1000";
  }

  static String marks(List<String> keys) {
    return "?, ".repeat(keys.size() - 1) + "?";
  }

  static int bind(PreparedStatement ps, int first, List<String> keys) throws SQLException {
    int i = first;
    for (String k : keys) {
      ps.setString(i++, k);
    }
    return i;
  }

  static Map<String, Long> readClaims(ResultSet rs) throws SQLException {
    Map<String, Long> claimed = new LinkedHashMap<>();
    while (rs.next()) {
      claimed.put(rs.getString(1), rs.getLong(2));
    }
    return claimed;
  }
}
