package dev.lease.core.group;

import dev.lease.core.dialect.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;

/** SQLite 3.42 or later. */
final class SqliteGroupSql extends GroupSql {

  SqliteGroupSql(Dialect dialect, String members, boolean unlocked) {
    super(dialect, members, unlocked);
  }

  static List<String> membersDdl(String members) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + members
            + " (group_name TEXT NOT NULL, member TEXT NOT NULL, instance TEXT NOT NULL DEFAULT '',"
            + " heartbeat_ms INTEGER NOT NULL, draining INTEGER NOT NULL DEFAULT 0,"
            + " PRIMARY KEY (group_name, member))");
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
                + " heartbeat_ms = excluded.heartbeat_ms, draining = excluded.draining")) {
      ps.setString(1, group);
      ps.setString(2, member);
      ps.setString(3, instance);
      ps.setInt(4, draining ? 1 : 0);
      ps.executeUpdate();
    }
  }

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
   * One UPDATE ... RETURNING (run with executeQuery: sqlite-jdbc refuses executeUpdate on it).
   * SQLite has no row locks: the UPDATE needs the database's single write lock, which a strict
   * verify took as its transaction's first act, so the batch waits (the busy timeout, bounded by
   * the attempt timeout) for every open verified transaction, as the single claim does. 'now' is
   * fixed within the statement, so the subquery and the UPDATE agree on what is expired.
   */
  @Override
  Map<String, Long> claim(
      Connection c, List<String> keys, int limit, String holder, String instance, long leaseMs)
      throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = term + 1, expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1 WHERE name IN (SELECT name FROM "
            + table
            + " WHERE name IN ("
            + marks(keys)
            + ") AND expires_at_ms <= "
            + clock
            + " ORDER BY name LIMIT ?) RETURNING name, term";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, holder);
      ps.setString(2, instance);
      ps.setLong(3, leaseMs);
      int i = bind(ps, 4, keys);
      ps.setInt(i, limit);
      try (ResultSet rs = ps.executeQuery()) {
        return readClaims(rs);
      }
    }
  }
}
