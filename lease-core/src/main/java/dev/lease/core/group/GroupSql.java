package dev.lease.core.group;

import dev.lease.core.Database;
import dev.lease.core.dialect.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Binds and runs the SQL of a {@link LeaseGroup}, the same way on every database: the members
 * table, and the batched statements on the ordinary lease table. What differs per database is text
 * only ({@link GroupSqlText}). The lease rows follow the lease table's rules exactly (those of
 * {@link Dialect}): a new row starts expired at the term {@code database clock ms × 1000} (terms
 * never repeat, even after a row is deleted); a claim sets a new holder and {@code term + 1} only
 * where the row is expired by the database clock; every statement reads the database clock inside
 * itself. No user value is concatenated into SQL: the table names are validated identifiers, keys
 * and group names are bound.
 */
final class GroupSql {

  /** How many keys one statement carries (the IN lists hold only placeholders). */
  static final int MAX_KEYS_PER_STATEMENT = 1000;

  private final String table;
  private final String members;
  private final String clock;
  private final GroupSqlText text;

  GroupSql(Dialect dialect, String members, boolean unlocked) {
    this.table = dialect.table();
    this.members = members;
    this.clock = dialect.clock();
    GroupSqlText t = GroupSqlText.of(dialect);
    this.text =
        new GroupSqlText(
            fill(t.membersDdl(), unlocked),
            fill(t.announce(), unlocked),
            fill(t.createRows(), unlocked),
            fill(t.claim(), unlocked),
            t.claimUpdate() == null ? null : fill(t.claimUpdate(), unlocked));
  }

  private String fill(String sql, boolean unlocked) {
    return sql.replace("{members}", members)
        .replace("{table}", table)
        .replace("{clock}", clock)
        .replace("{lock}", unlocked ? "" : " FOR UPDATE SKIP LOCKED");
  }

  static List<String> ddl(Database database, String members) {
    return List.of(GroupSqlText.of(database).membersDdl().replace("{members}", members));
  }

  List<String> ddl() {
    return List.of(text.membersDdl());
  }

  /**
   * Inserts this member's row unless it exists; run in a transaction of its own, before the
   * heartbeat's. Only a row of its own: on MySQL/MariaDB an insert into the members' index that
   * shares a transaction with statements locking other members' rows (the old first pass: an
   * upsert, then the purge of dead members scanning the group's rows) deadlocked when members
   * started together; a lone insert of a new primary key waits for nobody's row.
   */
  void announce(Connection c, String group, String member, String instance, boolean draining)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(text.announce())) {
      ps.setString(1, group);
      ps.setString(2, member);
      ps.setString(3, instance);
      ps.setInt(4, draining ? 1 : 0);
      ps.executeUpdate();
    }
  }

  /**
   * Writes this member's heartbeat (database clock) and draining flag: an UPDATE by primary key,
   * which locks only this member's row. Returns the rows it counted: 0 when the row is gone (purged
   * while this process was paused) or, under a driver that counts changed rows, when nothing
   * changed (same millisecond, same flag); the caller then announces again (a no-op if it exists).
   */
  int beat(Connection c, String group, String member, boolean draining) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE "
                + members
                + " SET heartbeat_ms = "
                + clock
                + ", draining = ? WHERE group_name = ? AND member = ?")) {
      ps.setInt(1, draining ? 1 : 0);
      ps.setString(2, group);
      ps.setString(3, member);
      return ps.executeUpdate();
    }
  }

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

  /** A live member of the group as the members table has it. */
  record MemberRow(String member, String instance, boolean draining) {}

  /**
   * The live members (heartbeat within {@code timeoutMs} of the database clock), draining or not,
   * sorted by member id: who may receive keys, and who may be moving some.
   */
  List<MemberRow> liveMemberRows(Connection c, String group, long timeoutMs) throws SQLException {
    List<MemberRow> rows = new ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT member, instance, draining FROM "
                + members
                + " WHERE group_name = ? AND heartbeat_ms > "
                + clock
                + " - ? ORDER BY member")) {
      ps.setString(1, group);
      ps.setLong(2, timeoutMs);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows.add(new MemberRow(rs.getString(1), rs.getString(2), rs.getInt(3) != 0));
        }
      }
    }
    return rows;
  }

  /**
   * How many of {@code keys} each instance holds now (rows not expired by the database clock; a
   * transfer not adopted yet counts for its successor); one statement.
   */
  Map<String, Integer> heldByInstance(Connection c, List<String> keys) throws SQLException {
    Map<String, Integer> counts = new LinkedHashMap<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT instance, COUNT(*) FROM "
                + table
                + " WHERE name IN ("
                + marks(keys.size())
                + ") AND expires_at_ms > "
                + clock
                + " GROUP BY instance")) {
      bind(ps, 1, keys);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          counts.put(rs.getString(1), rs.getInt(2));
        }
      }
    }
    return counts;
  }

  /**
   * Adopts the keys of {@code keys} transferred to {@code instance} and not expired: the pending
   * holder becomes {@code holder} (minted for this batch, never reused), the expiry the database
   * clock + {@code leaseMs}, the term stays the one the transfer wrote (as {@link
   * Dialect#adoptStep}). The same on every database: a plain read of the keys pending for {@code
   * instance} (nothing more when none is, the common case), then the UPDATE of those, then, if it
   * adopted anything, a read of the rows now held by {@code holder} (exactly this batch's: nobody
   * else has that token). Returns the adopted keys and their terms.
   */
  Map<String, Long> adopt(
      Connection c, List<String> keys, String instance, String holder, long leaseMs)
      throws SQLException {
    Map<String, Long> terms = new LinkedHashMap<>();
    // a plain read first, which locks nothing: an InnoDB UPDATE over every candidate locks each row
    // it reads, and a peer's claim (FOR UPDATE SKIP LOCKED) at that moment stepped over them
    // (members starting together were a key or two short after their claim pass on MariaDB)
    List<String> pending = new ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT name FROM "
                + table
                + " WHERE name IN ("
                + marks(keys.size())
                + ") AND holder = ? AND instance = ?")) {
      int i = bind(ps, 1, keys);
      ps.setString(i++, Dialect.TRANSFER_PENDING);
      ps.setString(i, instance);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          pending.add(rs.getString(1));
        }
      }
    }
    if (pending.isEmpty()) {
      return terms;
    }
    keys = pending;
    int n;
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE "
                + table
                + " SET holder = ?, expires_at_ms = "
                + clock
                + " + ?, revision = revision + 1 WHERE name IN ("
                + marks(keys.size())
                + ") AND holder = ? AND instance = ? AND expires_at_ms > "
                + clock)) {
      ps.setString(1, holder);
      ps.setLong(2, leaseMs);
      int i = bind(ps, 3, keys);
      ps.setString(i++, Dialect.TRANSFER_PENDING);
      ps.setString(i, instance);
      n = ps.executeUpdate();
    }
    if (n == 0) {
      return terms;
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT name, term FROM "
                + table
                + " WHERE name IN ("
                + marks(keys.size())
                + ") AND holder = ? ORDER BY name")) {
      int i = bind(ps, 1, keys);
      ps.setString(i, holder);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          terms.put(rs.getString(1), rs.getLong(2));
        }
      }
    }
    return terms;
  }

  /**
   * Deletes the rows of members whose heartbeat is older than {@code olderThanMs}: a plain read
   * finds them, then a DELETE by primary key (re-checking the age) removes them, so the live
   * members' rows are never locked by the purge (a range DELETE would lock every row of the group
   * it scans on MySQL/MariaDB).
   */
  int forgetDead(Connection c, String group, long olderThanMs) throws SQLException {
    List<String> dead = new ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT member FROM "
                + members
                + " WHERE group_name = ? AND heartbeat_ms < "
                + clock
                + " - ?")) {
      ps.setString(1, group);
      ps.setLong(2, olderThanMs);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next() && dead.size() < MAX_KEYS_PER_STATEMENT) {
          dead.add(rs.getString(1));
        }
      }
    }
    if (dead.isEmpty()) {
      return 0;
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "DELETE FROM "
                + members
                + " WHERE group_name = ? AND member IN ("
                + marks(dead.size())
                + ") AND heartbeat_ms < "
                + clock
                + " - ?")) {
      ps.setString(1, group);
      int i = bind(ps, 2, dead);
      ps.setLong(i, olderThanMs);
      return ps.executeUpdate();
    }
  }

  /**
   * The purge as it was, one range DELETE: on MySQL/MariaDB it locks every row of the group it
   * scans, and waits for a peer's row inserted in a transaction still open. Only the tests'
   * negative control ({@code FIRST_PASS_IN_ONE_TRANSACTION}) runs it.
   */
  int forgetDeadInRange(Connection c, String group, long olderThanMs) throws SQLException {
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
                + marks(keys.size())
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
        c.prepareStatement(
            "SELECT name FROM " + table + " WHERE name IN (" + marks(keys.size()) + ")")) {
      bind(ps, 1, keys);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          found.add(rs.getString(1));
        }
      }
    }
    return found;
  }

  /**
   * Creates the lease rows of {@code keys} that do not exist, expired, at the start term ({@code
   * database clock ms × 1000}, as the lease table's create); one statement. Keys come sorted, so
   * concurrent creates of the same keys lock in one order.
   */
  void createRows(Connection c, List<String> keys) throws SQLException {
    String row = "(?, (" + clock + ") * 1000)";
    String rows = (row + ", ").repeat(keys.size() - 1) + row;
    try (PreparedStatement ps = c.prepareStatement(text.createRows().replace("{rows}", rows))) {
      bind(ps, 1, keys);
      ps.executeUpdate();
    }
  }

  /**
   * Claims up to {@code limit} of {@code keys} that are free or expired by the database clock, for
   * {@code holder}: term + 1 each. Returns the claimed keys and their new terms.
   */
  Map<String, Long> claim(
      Connection c, List<String> keys, int limit, String holder, String instance, long leaseMs)
      throws SQLException {
    String read = text.claim().replace("{keys}", marks(keys.size()));
    Map<String, Long> terms = new LinkedHashMap<>();
    if (text.claimUpdate() == null) {
      try (PreparedStatement ps = c.prepareStatement(read)) {
        int i = bind(ps, 1, keys);
        ps.setInt(i++, limit);
        ps.setString(i++, holder);
        ps.setString(i++, instance);
        ps.setLong(i, leaseMs);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            terms.put(rs.getString(1), rs.getLong(2));
          }
        }
      }
      return terms;
    }
    try (PreparedStatement ps = c.prepareStatement(read)) {
      int i = bind(ps, 1, keys);
      ps.setInt(i, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          terms.put(rs.getString(1), rs.getLong(2) + 1);
        }
      }
    }
    if (terms.isEmpty()) {
      return terms;
    }
    List<String> locked = new ArrayList<>(terms.keySet());
    try (PreparedStatement ps =
        c.prepareStatement(text.claimUpdate().replace("{keys}", marks(locked.size())))) {
      ps.setString(1, holder);
      ps.setString(2, instance);
      ps.setLong(3, leaseMs);
      bind(ps, 4, locked);
      int n = ps.executeUpdate();
      if (n != locked.size()) {
        // cannot happen while the rows are locked; refuse rather than guess which were claimed
        throw new SQLException(
            "claimed " + n + " of " + locked.size() + " locked lease rows; rolled back");
      }
    }
    return terms;
  }

  private static String marks(int n) {
    return "?, ".repeat(n - 1) + "?";
  }

  private static int bind(PreparedStatement ps, int first, List<String> keys) throws SQLException {
    int i = first;
    for (String k : keys) {
      ps.setString(i++, k);
    }
    return i;
  }
}
