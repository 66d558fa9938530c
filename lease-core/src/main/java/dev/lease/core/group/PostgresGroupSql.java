package dev.lease.core.group;

import dev.lease.core.dialect.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;

/** PostgreSQL. */
final class PostgresGroupSql extends GroupSql {

  PostgresGroupSql(Dialect dialect, String members, boolean unlocked) {
    super(dialect, members, unlocked);
  }

  static List<String> membersDdl(String members) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + members
            + " (group_name varchar("
            + GROUP_WIDTH
            + ") NOT NULL, member varchar("
            + Dialect.HOLDER_WIDTH
            + ") NOT NULL, instance varchar("
            + Dialect.INSTANCE_WIDTH
            + ") NOT NULL DEFAULT '', heartbeat_ms bigint NOT NULL,"
            + " draining int NOT NULL DEFAULT 0, PRIMARY KEY (group_name, member))");
  }

  @Override
  List<String> ddl() {
    return membersDdl(members);
  }

  @Override
  void heartbeat(Connection c, String group, String member, String instance, boolean draining)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO "
                + members
                + " (group_name, member, instance, heartbeat_ms, draining) VALUES (?, ?, ?, "
                + clock
                + ", ?) ON CONFLICT (group_name, member) DO UPDATE SET"
                + " heartbeat_ms = EXCLUDED.heartbeat_ms, draining = EXCLUDED.draining")) {
      ps.setString(1, group);
      ps.setString(2, member);
      ps.setString(3, instance);
      ps.setInt(4, draining ? 1 : 0);
      ps.executeUpdate();
    }
  }

  /** Keys in one order on every member, so concurrent creates of the same keys do not deadlock. */
  @Override
  void createRows(Connection c, List<String> keys) throws SQLException {
    String values = ("(?, " + startTerm() + "), ").repeat(keys.size());
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO "
                + table
                + " (name, term) VALUES "
                + values.substring(0, values.length() - 2)
                + " ON CONFLICT (name) DO NOTHING")) {
      bind(ps, 1, keys);
      ps.executeUpdate();
    }
  }

  /**
   * One statement. The CTE locks the rows {@code FOR UPDATE}, as the single claim does: that lock
   * conflicts with the {@code FOR KEY SHARE} of a strict verify, so no key is claimed for term t+1
   * while a transaction verified under term t is open. {@code SKIP LOCKED} makes the batch step
   * over such a row (and over rows a peer's batch is claiming) instead of waiting for it: the row
   * is tried again at the next pass, and one paused transaction never holds up the claim of the
   * other keys. READ COMMITTED re-checks the expiry against the newest row version of each row it
   * locks, so a row a peer claimed meanwhile is not taken.
   */
  @Override
  Map<String, Long> claim(
      Connection c, List<String> keys, int limit, String holder, String instance, long leaseMs)
      throws SQLException {
    String sql =
        "WITH free AS (SELECT name FROM "
            + table
            + " WHERE name IN ("
            + marks(keys)
            + ") AND expires_at_ms <= "
            + clock
            + " ORDER BY name LIMIT ?"
            + rowLock
            + ")"
            + " UPDATE "
            + table
            + " t SET holder = ?, instance = ?, term = t.term + 1, expires_at_ms = "
            + clock
            + " + ?, revision = t.revision + 1 FROM free WHERE t.name = free.name"
            + " RETURNING t.name, t.term";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      int i = bind(ps, 1, keys);
      ps.setInt(i++, limit);
      ps.setString(i++, holder);
      ps.setString(i++, instance);
      ps.setLong(i, leaseMs);
      try (ResultSet rs = ps.executeQuery()) {
        return readClaims(rs);
      }
    }
  }
}
