package dev.lease.core.group;

import dev.lease.core.dialect.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** MySQL 8 and MariaDB 10.6 or later (InnoDB): both have {@code SKIP LOCKED}. */
final class MySqlGroupSql extends GroupSql {

  MySqlGroupSql(Dialect dialect, String members, boolean unlocked) {
    super(dialect, members, unlocked);
  }

  /** utf8mb4_bin: group names compare exactly, as lease names do. */
  static List<String> membersDdl(String members) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + members
            + " (group_name varchar("
            + GROUP_WIDTH
            + ") CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, member varchar("
            + Dialect.HOLDER_WIDTH
            + ") CHARACTER SET ascii NOT NULL, instance varchar("
            + Dialect.INSTANCE_WIDTH
            + ") CHARACTER SET utf8mb4 NOT NULL DEFAULT '', heartbeat_ms bigint NOT NULL,"
            + " draining int NOT NULL DEFAULT 0, PRIMARY KEY (group_name, member)) ENGINE=InnoDB");
  }

  @Override
  List<String> ddl() {
    return membersDdl(members);
  }

  /**
   * An UPDATE of the member's own row, and an INSERT IGNORE only when it matched nothing (the first
   * pass): concurrent upserts of new rows into one index take insert-intention and gap locks that
   * InnoDB resolves as deadlocks (seen with three members starting together); an UPDATE by primary
   * key locks only its row. The UPDATE may count 0 when it changed nothing (same millisecond, same
   * flag) under a driver that counts changed rows; the INSERT IGNORE is then a no-op.
   */
  @Override
  void heartbeat(Connection c, String group, String member, String instance, boolean draining)
      throws SQLException {
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
      if (ps.executeUpdate() == 1) {
        return;
      }
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT IGNORE INTO "
                + members
                + " (group_name, member, instance, heartbeat_ms, draining) VALUES (?, ?, ?, "
                + clock
                + ", ?)")) {
      ps.setString(1, group);
      ps.setString(2, member);
      ps.setString(3, instance);
      ps.setInt(4, draining ? 1 : 0);
      ps.executeUpdate();
    }
  }

  /**
   * INSERT IGNORE, as the single create: on a duplicate it takes only a shared lock, compatible
   * with strict verifies. Keys come sorted, so concurrent creates lock in one order.
   */
  @Override
  void createRows(Connection c, List<String> keys) throws SQLException {
    String values = ("(?, " + startTerm() + "), ").repeat(keys.size());
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT IGNORE INTO "
                + table
                + " (name, term) VALUES "
                + values.substring(0, values.length() - 2))) {
      bind(ps, 1, keys);
      ps.executeUpdate();
    }
  }

  /**
   * Two statements in one transaction (MySQL has no UPDATE ... RETURNING): a locking read of up to
   * {@code limit} expired rows with {@code FOR UPDATE SKIP LOCKED}, then one UPDATE of exactly
   * those rows. The exclusive lock conflicts with the {@code LOCK IN SHARE MODE} of a strict
   * verify, so a row with a transaction verified under its current term open is skipped (tried
   * again next pass), as are rows a peer's batch is claiming; locking reads see the newest
   * committed row, so a row a peer claimed meanwhile is not expired any more. The rows stay locked
   * until the commit, so each new term is the term read + 1; the UPDATE changes {@code term}, so
   * its count is the number claimed whatever rows the driver counts.
   */
  @Override
  Map<String, Long> claim(
      Connection c, List<String> keys, int limit, String holder, String instance, long leaseMs)
      throws SQLException {
    Map<String, Long> terms = new LinkedHashMap<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT name, term FROM "
                + table
                + " WHERE name IN ("
                + marks(keys)
                + ") AND expires_at_ms <= "
                + clock
                + " ORDER BY name LIMIT ?"
                + rowLock)) {
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
        c.prepareStatement(
            "UPDATE "
                + table
                + " SET holder = ?, instance = ?, term = term + 1, expires_at_ms = "
                + clock
                + " + ?, revision = revision + 1 WHERE name IN ("
                + marks(locked)
                + ") AND expires_at_ms <= "
                + clock)) {
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
}
