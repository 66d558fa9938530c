package dev.lease.core.dialect;

import dev.lease.core.dialect.LeaseSql.HeldRows;
import dev.lease.core.dialect.LeaseSql.NullableLong;
import dev.lease.core.internal.SqlRules;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The lease statements every database writes the same way, as text (the contract of each is on
 * {@link Dialect}); {@code PostgresDialect}, {@code MySqlDialect} and {@code SqliteDialect} extend
 * it and override the texts where their SQL differs. Each method writes its statement and names the
 * values that go into it, in order; {@link LeaseSql} binds and runs them. Where a statement is
 * written once for some databases only, its doc says which ("This implementation (SQLite)").
 */
abstract class StandardDialect extends Dialect {

  StandardDialect(String table, String clock, String clockMicros, SqlRules rules) {
    super(table, clock, clockMicros, rules);
  }

  @Override
  public void createRow(Connection c, String name) throws SQLException {
    LeaseSql.update(c, createRowSql(), name);
  }

  /** The create statement of {@link #createRow}; its one parameter is the name. */
  abstract String createRowSql();

  /**
   * The SQL expression of the term a new row starts at: the database clock in microseconds (SQLite:
   * milliseconds × 1000), so terms never repeat for a name even when its row is deleted (by hand, a
   * TRUNCATE, a dropped and recreated table). Every hand-over writes {@code max(term + 1, clock in
   * µs)} ({@link #nextTerm}), so an earlier row of the same name ended at most at its last
   * hand-over's clock + the hand-overs within one microsecond of it; a new row created later starts
   * above that unless the database clock was stepped back (or, on SQLite, the row was deleted and
   * created again within the same millisecond as its last hand-over). Stateless: nothing to keep,
   * nothing to lose with the table. The values stay far inside a bigint (about 1.8e15 in 2026; the
   * limit is near the year 292,000).
   */
  final String startTerm() {
    return rules.startTerm(stepClockMicros());
  }

  /** {@link #stepClock()} in microseconds (SQLite: milliseconds × 1000). */
  String stepClockMicros() {
    return clockMicros;
  }

  // ---- one statement per step ---------------------------------------------------------------

  /**
   * Text put before a step's statement that bounds it on the server (MariaDB's {@code SET STATEMENT
   * ... FOR}); empty where the bound is inside the statement or set by the session.
   */
  String stepPrefix(long timeoutMs) {
    return "";
  }

  /**
   * The clock expression of the one-statement steps; the same as {@link #clock()} except on
   * MariaDB, whose steps cannot reset a frozen session clock ({@code SET timestamp}) first.
   */
  String stepClock() {
    return clock;
  }

  @Override
  public boolean createRowStep(Connection c, String name, long timeoutMs) throws SQLException {
    return LeaseSql.updateOne(c, stepPrefix(timeoutMs) + createRowSql(), name);
  }

  @Override
  public boolean renewStep(
      Connection c, String name, String holder, long term, long leaseMs, long timeoutMs)
      throws SQLException {
    String sql =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + table
            + " SET expires_at_ms = "
            + stepClock()
            + " + ?, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND term = ? AND expires_at_ms > "
            + stepClock();
    return LeaseSql.updateOne(c, sql, leaseMs, name, holder, term);
  }

  @Override
  public boolean releaseStep(Connection c, String name, String holder, long term, long timeoutMs)
      throws SQLException {
    String sql =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + table
            + " SET expires_at_ms = 0, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND term = ?";
    return LeaseSql.updateOne(c, sql, name, holder, term);
  }

  @Override
  public boolean verifyStep(Connection c, String name, String holder, long term, long timeoutMs)
      throws SQLException {
    String sql =
        stepPrefix(timeoutMs)
            + "SELECT term FROM "
            + table
            + " WHERE name = ? AND holder = ? AND term = ? AND expires_at_ms > "
            + stepClock();
    return LeaseSql.first(c, sql, rs -> true, name, holder, term) != null;
  }

  /**
   * This implementation (MySQL, MariaDB: no {@code UPDATE ... RETURNING}) counts the rows; only
   * when fewer than all were renewed does a second statement read which ones are still ours and
   * unexpired, which after the UPDATE are exactly the ones it renewed (it set their expiry into the
   * future; a row it skipped was expired or someone else's, and stays so).
   */
  @Override
  public Set<Held> renewAll(Connection c, List<Held> leases, long leaseMs, long timeoutMs)
      throws SQLException {
    checkBatch(leases);
    String match = heldMatch(leases.size());
    String sql =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + tableByPrimaryKey()
            + " SET expires_at_ms = "
            + stepClock()
            + " + ?, revision = revision + 1 WHERE "
            + match
            + " AND expires_at_ms > "
            + stepClock();
    if (LeaseSql.update(c, sql, leaseMs, new HeldRows(leases)) == leases.size()) {
      return Set.copyOf(leases);
    }
    String read =
        "SELECT name, holder, term FROM "
            + tableByPrimaryKey()
            + " WHERE "
            + match
            + " AND expires_at_ms > "
            + stepClock();
    return new HashSet<>(LeaseSql.query(c, read, LeaseSql::held, new HeldRows(leases)));
  }

  /**
   * This implementation serves MySQL, MariaDB (the step's bounds in front) and SQLite (its own
   * {@link #heldMatch}).
   */
  @Override
  public int releaseAll(Connection c, List<Held> leases, long timeoutMs) throws SQLException {
    checkBatch(leases);
    String sql =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + tableByPrimaryKey()
            + " SET expires_at_ms = 0, revision = revision + 1 WHERE "
            + heldMatch(leases.size());
    return LeaseSql.update(c, sql, new HeldRows(leases));
  }

  static void checkBatch(List<Held> leases) {
    if (leases.isEmpty() || leases.size() > MAX_RENEWALS_PER_STATEMENT) {
      throw new IllegalArgumentException(
          "a batch takes 1 to " + MAX_RENEWALS_PER_STATEMENT + " leases, got " + leases.size());
    }
  }

  /**
   * The WHERE of a batch: the name list first, so the primary key finds the rows (only they are
   * read and locked), then the exact (name, holder, term) of each; its parameters are {@link
   * HeldRows}.
   */
  String heldMatch(int n) {
    return "name IN ("
        + "?, ".repeat(n - 1)
        + "?) AND (name, holder, term) IN ("
        + "(?, ?, ?), ".repeat(n - 1)
        + "(?, ?, ?))";
  }

  // ---- transfer -----------------------------------------------------------------------------

  /**
   * This implementation (SQLite): one UPDATE ... RETURNING; SQLite's single writer orders it after
   * every transaction whose strict verify (a write) came first.
   */
  @Override
  public Long transferStep(
      Connection c,
      String name,
      String holder,
      long term,
      String successor,
      long adoptWithinMs,
      long timeoutMs)
      throws SQLException {
    String sql =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = "
            + nextTerm("term", stepClockMicros())
            + ", expires_at_ms = "
            + stepClock()
            + " + ?, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND term = ? AND expires_at_ms > "
            + stepClock()
            + " RETURNING term";
    return LeaseSql.first(
        c,
        sql,
        rs -> rs.getLong(1),
        TRANSFER_PENDING,
        successor,
        adoptWithinMs,
        name,
        holder,
        term);
  }

  /**
   * This implementation (SQLite): one UPDATE ... RETURNING, ordered by the single writer after
   * every transaction whose strict verify came first, as {@link #transferStep}.
   */
  @Override
  public Map<String, Long> transferAll(
      Connection c, List<Held> leases, String successor, long adoptWithinMs, long timeoutMs)
      throws SQLException {
    checkBatch(leases);
    String sql =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = "
            + nextTerm("term", stepClockMicros())
            + ", expires_at_ms = "
            + stepClock()
            + " + ?, revision = revision + 1 WHERE "
            + heldMatch(leases.size())
            + " AND expires_at_ms > "
            + stepClock()
            + " RETURNING name, term";
    return termsByName(
        LeaseSql.query(
            c,
            sql,
            rs -> Map.entry(rs.getString(1), rs.getLong(2)),
            TRANSFER_PENDING,
            successor,
            adoptWithinMs,
            new HeldRows(leases)));
  }

  /** The (name, term) rows a batch returned, by name. */
  static Map<String, Long> termsByName(List<Map.Entry<String, Long>> rows) {
    Map<String, Long> terms = new HashMap<>();
    for (Map.Entry<String, Long> e : rows) {
      terms.put(e.getKey(), e.getValue());
    }
    return terms;
  }

  /** This implementation (SQLite): UPDATE ... RETURNING. */
  @Override
  public Long adoptStep(
      Connection c, String name, String instance, String holder, long leaseMs, long timeoutMs)
      throws SQLException {
    String sql =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + table
            + " SET holder = ?, expires_at_ms = "
            + stepClock()
            + " + ?, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND instance = ? AND expires_at_ms > "
            + stepClock()
            + " RETURNING term";
    return LeaseSql.first(
        c, sql, rs -> rs.getLong(1), holder, leaseMs, name, TRANSFER_PENDING, instance);
  }

  // ---- outside the steps --------------------------------------------------------------------

  @Override
  public boolean renew(Connection c, String name, String holder, long term, long leaseMs)
      throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND term = ? AND expires_at_ms > "
            + clock;
    return LeaseSql.updateOne(c, sql, leaseMs, name, holder, term);
  }

  @Override
  public boolean release(Connection c, String name, String holder, long term) throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET expires_at_ms = 0, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND term = ?";
    return LeaseSql.updateOne(c, sql, name, holder, term);
  }

  @Override
  public long now(Connection c) throws SQLException {
    return LeaseSql.firstPlain(c, "SELECT " + clock, rs -> rs.getLong(1));
  }

  @Override
  public void checkTable(Connection c) throws SQLException {
    checkColumns(c, table);
  }

  @Override
  public void checkColumns(Connection c) throws SQLException {
    checkColumns(c, name);
  }

  private static void checkColumns(Connection c, String reference) throws SQLException {
    LeaseSql.firstPlain(
        c,
        "SELECT name, holder, instance, term, expires_at_ms, revision"
            + " FROM "
            + reference
            + " WHERE 1 = 0",
        rs -> null);
  }

  @Override
  public RowState describe(Connection c, String name) throws SQLException {
    String sql =
        "SELECT instance, term, expires_at_ms, " + clock + " FROM " + table + " WHERE name = ?";
    return LeaseSql.first(
        c,
        sql,
        rs -> new RowState(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getLong(4)),
        name);
  }

  @Override
  public void checkWritable(Connection c) throws SQLException {
    LeaseSql.updatePlain(c, "UPDATE " + table + " SET revision = revision WHERE 1 = 0");
  }

  // ---- scheduler slots ----------------------------------------------------------------------

  /**
   * The null-safe equality operator of this database ({@code a <op> b} is true when both are null
   * or both equal): MySQL's {@code <=>}, SQLite's {@code IS}. Used by the compare-and-set slot
   * claim of {@link #claimSlot}; PostgreSQL claims differently and never asks.
   */
  String nullSafeEquals() {
    throw new UnsupportedOperationException(product() + " claims slots in one statement");
  }

  /**
   * This implementation (MySQL, MariaDB, SQLite) is a compare-and-set: neither MySQL's UPDATE (no
   * RETURNING) nor SQLite's RETURNING (only the new row) can report what a claim replaced, and on
   * InnoDB a locking read first would queue every polling replica behind the holder's
   * strict-verified transactions. So: a plain read of the row, then an UPDATE that claims only if
   * the row still is exactly what was read (term, last and unfinished instant, compared null-safe
   * with {@link #nullSafeEquals}); what the claim reports as superseded is then exactly what it
   * replaced. The new term is computed by the UPDATE itself ({@link #nextTerm}, the clock of that
   * statement) and handed back by it ({@link #claimedTerm}), never by the client. The UPDATE checks
   * that the name is free, the instant later than the last on record and reached by the database
   * clock. InnoDB in READ COMMITTED evaluates that against the newest committed row before it
   * locks, like {@link #claim}; SQLite's single writer serialises the UPDATE with every other
   * write. The UPDATE changes {@code term}, so 1 means claimed whatever rows a MySQL driver counts.
   */
  @Override
  public SlotClaimed claimSlot(
      Connection c,
      String name,
      String holder,
      String instance,
      long leaseMs,
      long instantMs,
      boolean requireLater)
      throws SQLException {
    SlotClaimed read =
        LeaseSql.first(
            c,
            "SELECT term, slot_ms, unfinished_slot_ms, instance FROM " + table + " WHERE name = ?",
            rs ->
                new SlotClaimed(
                    rs.getLong(1),
                    nullableLong(rs, 2),
                    nullableLong(rs, 3),
                    !instance.equals(rs.getString(4))),
            name);
    if (read == null) {
      return null;
    }
    long term = read.term();
    Long slot = read.previousSlotMs();
    Long unfinished = read.previousUnfinishedMs();
    String eq = nullSafeEquals();
    String update =
        "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = "
            + returnedTerm(nextTerm("term"))
            + ","
            + " expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1,"
            + " slot_ms = ?, unfinished_slot_ms = ?, rerun_slot_ms = NULL"
            + " WHERE name = ? AND term = ? AND slot_ms "
            + eq
            + " ? AND unfinished_slot_ms "
            + eq
            + " ? AND expires_at_ms <= "
            + clock
            + (requireLater ? " AND (slot_ms IS NULL OR slot_ms < ?)" : "")
            + " AND ? <= "
            + clock;
    List<Object> params = new ArrayList<>();
    params.addAll(List.of(holder, instance, leaseMs, instantMs, instantMs, name, term));
    params.add(new NullableLong(slot));
    params.add(new NullableLong(unfinished));
    if (requireLater) {
      params.add(instantMs);
    }
    params.add(instantMs);
    Long next = claimedTerm(c, update, params.toArray());
    if (next == null) {
      return null;
    }
    return new SlotClaimed(next, slot, unfinished, read.fromAnother());
  }

  /**
   * The term expression of a compare-and-set claim ({@link #claimSlot}) as the statement must write
   * it to hand the new term back ({@link #claimedTerm}): this implementation (SQLite) as it is,
   * read with {@code RETURNING}.
   */
  String returnedTerm(String next) {
    return next;
  }

  /**
   * Runs a compare-and-set claim's UPDATE; the new term it wrote, or null if it claimed nothing.
   * This implementation (SQLite): {@code UPDATE ... RETURNING term}.
   */
  Long claimedTerm(Connection c, String update, Object[] params) throws SQLException {
    return LeaseSql.first(c, update + " RETURNING term", rs -> rs.getLong(1), params);
  }

  /** The same text on every database. */
  @Override
  public boolean finishSlot(
      Connection c, String name, String holder, long term, long instantMs, long overrunMs)
      throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET expires_at_ms = 0, revision = revision + 1,"
            + " unfinished_slot_ms = NULL, rerun_slot_ms = NULL,"
            + " slot_ms = CASE WHEN ? > slot_ms AND ? <= "
            + clock
            + " THEN ? ELSE slot_ms END"
            + " WHERE name = ? AND holder = ? AND term = ? AND unfinished_slot_ms = ?";
    return LeaseSql.updateOne(
        c, sql, overrunMs, overrunMs, overrunMs, name, holder, term, instantMs);
  }

  @Override
  public Long lastSlot(Connection c, String name) throws SQLException {
    return LeaseSql.first(
        c, "SELECT slot_ms FROM " + table + " WHERE name = ?", rs -> nullableLong(rs, 1), name);
  }

  @Override
  public SlotStates slotStates(Connection c, List<String> names) throws SQLException {
    if (names.isEmpty() || names.size() > MAX_NAMES_PER_STATEMENT) {
      throw new IllegalArgumentException(
          "slotStates takes 1 to " + MAX_NAMES_PER_STATEMENT + " names, got " + names.size());
    }
    String sql =
        "SELECT name, slot_ms, unfinished_slot_ms, rerun_slot_ms,"
            + " CASE WHEN expires_at_ms <= "
            + clock
            + " THEN 1 ELSE 0 END, "
            + clock
            + " FROM "
            + table
            + " WHERE name IN ("
            + "?, ".repeat(names.size() - 1)
            + "?)";
    Map<String, SlotState> states = new HashMap<>();
    Long databaseNow = null;
    for (SlotRow row :
        LeaseSql.query(
            c,
            sql,
            rs ->
                new SlotRow(
                    rs.getString(1),
                    new SlotState(
                        nullableLong(rs, 2),
                        nullableLong(rs, 3),
                        nullableLong(rs, 4),
                        rs.getInt(5) == 1),
                    rs.getLong(6)),
            names)) {
      states.put(row.name(), row.state());
      databaseNow = row.databaseNowMs();
    }
    return new SlotStates(databaseNow != null ? databaseNow : now(c), states);
  }

  /** One row of {@link #slotStates}. */
  private record SlotRow(String name, SlotState state, long databaseNowMs) {}

  static Long nullableLong(ResultSet rs, int column) throws SQLException {
    return LeaseSql.nullableLong(rs, column);
  }
}
