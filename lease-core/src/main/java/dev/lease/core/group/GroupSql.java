package dev.lease.core.group;

import dev.lease.core.Database;
import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.GroupRules;
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
 * {@link Dialect}): a new row starts expired at the term {@code database clock in µs} (terms never
 * repeat, even after a row is deleted); a claim sets a new holder and {@code max(term + 1, clock in
 * µs)} only where the row is expired by the database clock; every statement reads the database
 * clock inside itself. No user value is concatenated into SQL: the table names are validated
 * identifiers, keys and group names are bound.
 */
final class GroupSql {

  /** How many keys one statement carries (the IN lists hold only placeholders). */
  static final int MAX_KEYS_PER_STATEMENT = 1000;

  private final String table;
  private final String keyed;
  private final String members;
  private final String clock;
  private final String clockMicros;
  private final String startTerm;
  private final String nextTerm;
  private final String nextTermOfRow;
  private final String nextTermBound;
  private final GroupSqlText text;

  GroupSql(Dialect dialect, String members, GroupRules rules) {
    this.table = dialect.reference();
    this.keyed = dialect.tableByPrimaryKey();
    this.members = members;
    this.clock = dialect.clock();
    this.clockMicros = dialect.clockMicros();
    this.startTerm = dialect.startTermSql();
    this.nextTerm = dialect.nextTerm("t.term");
    this.nextTermOfRow = dialect.nextTerm("term");
    this.nextTermBound = dialect.nextTerm("term", "?");
    GroupSqlText t = GroupSqlText.of(dialect);
    String lock = rules.claimLock(" FOR UPDATE SKIP LOCKED");
    this.text =
        new GroupSqlText(
            fill(t.membersDdl(), lock),
            fill(t.announce(), lock),
            fill(t.createRows(), lock),
            fill(t.claim(), lock),
            t.claimUpdate() == null ? null : fill(t.claimUpdate(), lock));
  }

  private String fill(String sql, String lock) {
    return sql.replace("{members}", members)
        .replace("{keyed}", keyed)
        .replace("{table}", table)
        .replace("{nextTermBound}", nextTermBound)
        .replace("{nextTermOfRow}", nextTermOfRow)
        .replace("{nextTerm}", nextTerm)
        .replace("{clockMicros}", clockMicros)
        .replace("{clock}", clock)
        .replace("{lock}", lock);
  }

  /** The members table's name. */
  String members() {
    return members;
  }

  /** The database clock in milliseconds, as an SQL expression. */
  String clock() {
    return clock;
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
    update(c, text.announce(), group, member, instance, draining ? 1 : 0);
  }

  /**
   * Writes this member's heartbeat (database clock) and draining flag: an UPDATE by primary key,
   * which locks only this member's row. Returns the rows it counted: 0 when the row is gone (purged
   * while this process was paused) or, under a driver that counts changed rows, when nothing
   * changed (same millisecond, same flag); the caller then announces again (a no-op if it exists).
   */
  int beat(Connection c, String group, String member, boolean draining) throws SQLException {
    return update(
        c,
        "UPDATE "
            + members
            + " SET heartbeat_ms = "
            + clock
            + ", draining = ? WHERE group_name = ? AND member = ?",
        draining ? 1 : 0,
        group,
        member);
  }

  /** A live member of the group as the members table has it. */
  record MemberRow(String member, String instance, boolean draining) {}

  /**
   * The live members (heartbeat within {@code timeoutMs} of the database clock), draining or not,
   * sorted by member id: who may receive keys, and who may be moving some.
   */
  List<MemberRow> liveMemberRows(Connection c, String group, long timeoutMs) throws SQLException {
    return query(
        c,
        "SELECT member, instance, draining FROM "
            + members
            + " WHERE group_name = ? AND heartbeat_ms > "
            + clock
            + " - ? ORDER BY member",
        rs -> new MemberRow(rs.getString(1), rs.getString(2), rs.getInt(3) != 0),
        group,
        timeoutMs);
  }

  /**
   * How many of {@code keys} each instance holds now (rows not expired by the database clock; a
   * transfer not adopted yet counts for its successor); one statement.
   */
  Map<String, Integer> heldByInstance(Connection c, List<String> keys) throws SQLException {
    Map<String, Integer> counts = new LinkedHashMap<>();
    for (Map.Entry<String, Integer> e :
        query(
            c,
            "SELECT instance, COUNT(*) FROM "
                + table
                + " WHERE name IN ("
                + marks(keys.size())
                + ") AND expires_at_ms > "
                + clock
                + " GROUP BY instance",
            rs -> Map.entry(rs.getString(1), rs.getInt(2)),
            keys)) {
      counts.put(e.getKey(), e.getValue());
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
    // a plain read first, which locks nothing: an InnoDB UPDATE over every candidate locks each row
    // it reads, and a peer's claim (FOR UPDATE SKIP LOCKED) at that moment stepped over them
    // (members starting together were a key or two short after their claim pass on MariaDB)
    List<String> pending =
        query(
            c,
            "SELECT name FROM "
                + table
                + " WHERE name IN ("
                + marks(keys.size())
                + ") AND holder = ? AND instance = ?",
            rs -> rs.getString(1),
            keys,
            Dialect.TRANSFER_PENDING,
            instance);
    if (pending.isEmpty()) {
      return new LinkedHashMap<>();
    }
    int n =
        update(
            c,
            "UPDATE "
                + keyed
                + " SET holder = ?, expires_at_ms = "
                + clock
                + " + ?, revision = revision + 1 WHERE name IN ("
                + marks(pending.size())
                + ") AND holder = ? AND instance = ? AND expires_at_ms > "
                + clock,
            holder,
            leaseMs,
            pending,
            Dialect.TRANSFER_PENDING,
            instance);
    if (n == 0) {
      return new LinkedHashMap<>();
    }
    return terms(
        c,
        "SELECT name, term FROM "
            + table
            + " WHERE name IN ("
            + marks(pending.size())
            + ") AND holder = ? ORDER BY name",
        0,
        pending,
        holder);
  }

  /**
   * Deletes the rows of members whose heartbeat is older than {@code olderThanMs}: a plain read
   * finds them, then a DELETE by primary key (re-checking the age) removes them, so the live
   * members' rows are never locked by the purge (a range DELETE would lock every row of the group
   * it scans on MySQL/MariaDB).
   */
  int forgetDead(Connection c, String group, long olderThanMs) throws SQLException {
    List<String> dead =
        query(
            c,
            "SELECT member FROM "
                + members
                + " WHERE group_name = ? AND heartbeat_ms < "
                + clock
                + " - ?",
            rs -> rs.getString(1),
            group,
            olderThanMs);
    if (dead.isEmpty()) {
      return 0;
    }
    dead = dead.subList(0, Math.min(dead.size(), MAX_KEYS_PER_STATEMENT));
    return update(
        c,
        "DELETE FROM "
            + members
            + " WHERE group_name = ? AND member IN ("
            + marks(dead.size())
            + ") AND heartbeat_ms < "
            + clock
            + " - ?",
        group,
        dead,
        olderThanMs);
  }

  /** Deletes this member's row (a closing group: its peers stop counting it at once). */
  void deleteMember(Connection c, String group, String member) throws SQLException {
    update(c, "DELETE FROM " + members + " WHERE group_name = ? AND member = ?", group, member);
  }

  /**
   * Gives back the rows of {@code keys} still claimed by {@code holder}: the claims of a batch
   * whose attempt timed out on this side and may have committed anyway (nobody holds them). The
   * holder token is minted per batch and never reused, so this can only touch that batch's claims.
   */
  int releaseBatch(Connection c, List<String> keys, String holder) throws SQLException {
    return update(
        c,
        "UPDATE "
            + keyed
            + " SET expires_at_ms = 0, revision = revision + 1 WHERE holder = ? AND name IN ("
            + marks(keys.size())
            + ")",
        holder,
        keys);
  }

  /** Which of {@code keys} have a lease row; one statement. */
  Set<String> existing(Connection c, List<String> keys) throws SQLException {
    return new HashSet<>(
        query(
            c,
            "SELECT name FROM " + table + " WHERE name IN (" + marks(keys.size()) + ")",
            rs -> rs.getString(1),
            keys));
  }

  /**
   * Creates the lease rows of {@code keys} that do not exist, expired, at the start term (the
   * database clock in µs, as the lease table's create); one statement. Keys come sorted, so
   * concurrent creates of the same keys lock in one order.
   */
  void createRows(Connection c, List<String> keys) throws SQLException {
    String row = "(?, " + startTerm + ")";
    String rows = (row + ", ").repeat(keys.size() - 1) + row;
    update(c, text.createRows().replace("{rows}", rows), keys);
  }

  /**
   * Claims up to {@code limit} of {@code keys} that are free or expired by the database clock, for
   * {@code holder}: each at {@code max(term + 1, database clock in µs)} ({@link Dialect#nextTerm}).
   * Returns the claimed keys and their new terms.
   */
  Map<String, Long> claim(
      Connection c, List<String> keys, int limit, String holder, String instance, long leaseMs)
      throws SQLException {
    String read = text.claim().replace("{keys}", marks(keys.size()));
    if (text.claimUpdate() == null) {
      return terms(c, read, 0, keys, limit, holder, instance, leaseMs);
    }
    // the locking read returns each row's term and the database clock (µs), bound as the floor of
    // the new terms: each is then max(term + 1, that clock), known without reading back
    long[] floor = {Long.MIN_VALUE};
    Map<String, Long> terms = new LinkedHashMap<>();
    for (Map.Entry<String, Long> e :
        query(
            c,
            read,
            rs -> {
              floor[0] = Math.max(floor[0], rs.getLong(3));
              return Map.entry(rs.getString(1), rs.getLong(2));
            },
            keys,
            limit)) {
      terms.put(e.getKey(), e.getValue());
    }
    if (terms.isEmpty()) {
      return terms;
    }
    terms.replaceAll((k, term) -> Math.max(term + 1, floor[0]));
    List<String> locked = new ArrayList<>(terms.keySet());
    int n =
        update(
            c,
            text.claimUpdate().replace("{keys}", marks(locked.size())),
            holder,
            instance,
            floor[0],
            leaseMs,
            locked);
    if (n != locked.size()) {
      // cannot happen while the rows are locked; refuse rather than guess which were claimed
      throw new SQLException(
          "claimed " + n + " of " + locked.size() + " locked lease rows; rolled back");
    }
    return terms;
  }

  private static String marks(int n) {
    return "?, ".repeat(n - 1) + "?";
  }

  /** One row of a result, read into one value. */
  private interface Row<T> {
    T read(ResultSet rs) throws SQLException;
  }

  /** Runs the update {@code sql} with {@code params} (see {@link #bind}); the rows it changed. */
  private static int update(Connection c, String sql, Object... params) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      bind(ps, params);
      return ps.executeUpdate();
    }
  }

  /** Runs the query {@code sql} with {@code params} (see {@link #bind}); every row, read. */
  private static <T> List<T> query(Connection c, String sql, Row<T> row, Object... params)
      throws SQLException {
    List<T> rows = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      bind(ps, params);
      // MariaDB's claim read is a SET STATEMENT ... FOR SELECT
      try (ResultSet rs = Dialect.executeRead(ps, sql)) {
        while (rs.next()) {
          rows.add(row.read(rs));
        }
      }
    }
    return rows;
  }

  /** Name and term of each row of the query {@code sql}, the term plus {@code add}, in order. */
  private static Map<String, Long> terms(Connection c, String sql, long add, Object... params)
      throws SQLException {
    Map<String, Long> terms = new LinkedHashMap<>();
    for (Map.Entry<String, Long> e :
        query(c, sql, rs -> Map.entry(rs.getString(1), rs.getLong(2) + add), params)) {
      terms.put(e.getKey(), e.getValue());
    }
    return terms;
  }

  /**
   * Binds {@code params} in order: a {@code String}, {@code Long} or {@code Integer} to one
   * parameter, a {@code List} of keys to one parameter each.
   */
  private static void bind(PreparedStatement ps, Object... params) throws SQLException {
    int i = 1;
    for (Object p : params) {
      if (p instanceof List<?> keys) {
        for (Object k : keys) {
          ps.setString(i++, (String) k);
        }
      } else if (p instanceof String v) {
        ps.setString(i++, v);
      } else if (p instanceof Long v) {
        ps.setLong(i++, v);
      } else if (p instanceof Integer v) {
        ps.setInt(i++, v);
      } else {
        throw new IllegalArgumentException("cannot bind " + p);
      }
    }
  }
}
