package dev.lease.core.dialect;

import dev.lease.core.dialect.LeaseSql.HeldArrays;
import dev.lease.core.internal.SqlRules;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** PostgreSQL 12 or later. */
final class PostgresDialect extends StandardDialect {

  /**
   * {@code clock_timestamp()}, never {@code now()}: {@code now()} is the start of the transaction,
   * so late in a long transaction it would make a live lease look younger than it is.
   */
  private static final String CLOCK =
      "(pg_catalog.floor(EXTRACT(epoch FROM pg_catalog.clock_timestamp()) * 1000))::bigint";

  /** {@link #CLOCK} in microseconds (PostgreSQL's timestamps have microsecond resolution). */
  private static final String CLOCK_MICROS =
      "(pg_catalog.floor(EXTRACT(epoch FROM pg_catalog.clock_timestamp()) * 1000000))::bigint";

  PostgresDialect(String table, String clockFunction, SqlRules rules) {
    super(
        table,
        clockFunction != null ? clockFunction : CLOCK,
        clockFunction != null ? "(" + clockFunction + " * 1000)" : CLOCK_MICROS,
        rules);
  }

  /**
   * The schema the configured name means for an ordinary session: its own schema if qualified, else
   * the first schema of the session's {@code search_path} ({@code current_schemas(false)}, which
   * never lists the implicit {@code pg_temp}) holding a table of that name that is not temporary.
   * The reference is the quoted {@code "schema"."table"}: a temporary table, a changed {@code
   * search_path} or {@code setSchema} cannot stand in for it. A table that does not exist yet keeps
   * the configured name (the table check then says it is missing).
   */
  @Override
  public void resolve(Connection c) throws SQLException {
    int dot = name.indexOf('.');
    String schema = dot < 0 ? null : name.substring(0, dot).toLowerCase(java.util.Locale.ROOT);
    String relation = (dot < 0 ? name : name.substring(dot + 1)).toLowerCase(java.util.Locale.ROOT);
    String found =
        LeaseSql.first(
            c,
            "SELECT n.nspname FROM pg_catalog.pg_class r"
                + " JOIN pg_catalog.pg_namespace n ON n.oid = r.relnamespace"
                + " WHERE r.relname = ? AND r.relpersistence <> 't' AND r.relkind IN ('r', 'p')"
                + " AND n.nspname = ANY (CASE WHEN ?::text IS NULL"
                + " THEN pg_catalog.current_schemas(false) ELSE ARRAY[?::name] END)"
                + " ORDER BY pg_catalog.array_position(pg_catalog.current_schemas(false),"
                + " n.nspname) NULLS LAST LIMIT 1",
            rs -> rs.getString(1),
            relation,
            schema,
            schema);
    if (found != null) {
      table = quoted(found) + "." + quoted(relation);
    }
  }

  private static String quoted(String identifier) {
    return '"' + identifier.replace("\"", "\"\"") + '"';
  }

  @Override
  public String product() {
    return "PostgreSQL";
  }

  @Override
  public List<String> ddl() {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + name
            + " ("
            + "name varchar("
            + NAME_WIDTH
            + ") NOT NULL PRIMARY KEY, "
            + "holder varchar("
            + HOLDER_WIDTH
            + ") NOT NULL DEFAULT '', "
            + "instance varchar("
            + INSTANCE_WIDTH
            + ") NOT NULL DEFAULT '', "
            + "term bigint NOT NULL DEFAULT 0, "
            + "expires_at_ms bigint NOT NULL DEFAULT 0, "
            + "revision bigint NOT NULL DEFAULT 0, "
            + "slot_ms bigint, "
            + "unfinished_slot_ms bigint, "
            + "rerun_slot_ms bigint)");
  }

  @Override
  public boolean isMissingTable(SQLException e) {
    return "42P01".equals(e.getSQLState()); // undefined_table
  }

  /**
   * One transaction per attempt; {@code lock_timeout} and {@code statement_timeout} are set LOCAL
   * so they end with it and never leak into a pooled connection's next user.
   */
  @Override
  public <T> T inLeaseSession(Connection c, long timeoutMs, SqlCall<T> call) throws SQLException {
    boolean autoCommit = c.getAutoCommit();
    if (autoCommit) {
      c.setAutoCommit(false);
    }
    Throwable failure = null;
    try {
      // READ COMMITTED whatever the pool's default: the claim relies on READ COMMITTED re-checking
      // the newest row version after a lock wait, and under REPEATABLE READ or SERIALIZABLE a lost
      // race (claim, or create-row's ON CONFLICT) fails with "could not serialize access" instead
      // of finding the lease held (ClaimRaceTest). First statement of the transaction, so it
      // applies
      // to this transaction only and never leaks into the pooled connection.
      LeaseSql.executePlain(c, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
      String ms = Long.toString(timeoutMs);
      LeaseSql.first(
          c,
          "SELECT pg_catalog.set_config('lock_timeout', ?, true),"
              + " pg_catalog.set_config('statement_timeout', ?, true),"
              // a holder paused between its UPDATE and COMMIT would keep the lease row locked
              // (no successor could claim) until it resumes: the server ends such a session
              + " pg_catalog.set_config('idle_in_transaction_session_timeout', ?, true)",
          rs -> null,
          ms,
          ms,
          ms);
      T result = call.call(c);
      c.commit();
      return result;
    } catch (SQLException | RuntimeException | Error e) {
      failure = e;
      LeaseSql.rollbackQuietly(c, e);
      throw e;
    } finally {
      LeaseSql.restore(
          rules,
          failure,
          () -> {
            if (autoCommit) {
              c.setAutoCommit(true);
            }
          });
    }
  }

  @Override
  String createRowSql() {
    return "INSERT INTO "
        + table
        + " (name, term) VALUES (?, "
        + startTerm()
        + ") ON CONFLICT (name) DO NOTHING";
  }

  /**
   * Under REPEATABLE READ or SERIALIZABLE (a pool's default), a create that races another one fails
   * with a serialization error instead of doing nothing: the row exists then, created by the other.
   */
  @Override
  public boolean createRowStep(Connection c, String name, long timeoutMs) throws SQLException {
    return lostRaceAs(c, false, () -> super.createRowStep(c, name, timeoutMs));
  }

  /**
   * The bounds of a step, inside its WHERE: {@code lock_timeout} (and, for a connection handed out
   * with autocommit off, {@code idle_in_transaction_session_timeout}) set LOCAL, so they end with
   * the statement's own transaction and the session keeps its settings. The server reads {@code
   * lock_timeout} when a lock wait begins, and a row reaches the lock (the {@code FOR UPDATE}, the
   * UPDATE's row lock) only after its filter, this condition included, passed. The statement's time
   * is bounded by the network timeout the attempt sets (client side, no round trip). Two
   * parameters, both the timeout in ms as text ({@link #bound}).
   */
  private static final String BOUND =
      "(pg_catalog.set_config('lock_timeout', ?, true)"
          + " || pg_catalog.set_config('idle_in_transaction_session_timeout', ?, true)) IS NOT NULL";

  private static String bound(long timeoutMs) {
    return Long.toString(Math.max(1, timeoutMs));
  }

  /** A statement whose race lost under REPEATABLE READ or SERIALIZABLE reports {@code lost}. */
  @FunctionalInterface
  private interface Race<T> {
    T run() throws SQLException;
  }

  /**
   * Runs {@code race}; a serialization failure (SQLSTATE 40001: a pool that defaults to REPEATABLE
   * READ or SERIALIZABLE, where another process changed the row since the statement began) is a
   * lost race: rolled back (a connection handed out with autocommit off) and reported as {@code
   * lost}.
   */
  private static <T> T lostRaceAs(Connection c, T lost, Race<T> race) throws SQLException {
    try {
      return race.run();
    } catch (SQLException e) {
      if (!"40001".equals(e.getSQLState())) {
        throw e;
      }
      if (!c.getAutoCommit()) {
        c.rollback();
      }
      return lost;
    }
  }

  /**
   * {@link #claim} in one statement: the same {@code FOR UPDATE} CTE (so the claim of term t+1
   * still waits for every transaction a strict verify let in under term t), and the statement also
   * says whether the row exists. It runs in the session's own isolation: one statement is one
   * transaction, where READ COMMITTED re-checks the newest row version after a lock wait and
   * REPEATABLE READ or SERIALIZABLE fail with a serialization error instead, which is a lost race
   * (another process changed the row since the statement began) and reported as held
   * (ClaimRaceTest).
   */
  @Override
  public ClaimResult claimStep(
      Connection c, String name, String holder, String instance, long leaseMs, long timeoutMs)
      throws SQLException {
    String sql =
        "WITH expired AS (SELECT name, instance FROM "
            + table
            + " WHERE name = ? AND "
            + BOUND
            + " AND expires_at_ms <= "
            + clock
            + " FOR UPDATE),"
            + " claimed AS (UPDATE "
            + giveRow()
            + " FROM expired WHERE t.name = expired.name RETURNING t.term, expired.instance)"
            + " SELECT (SELECT term FROM claimed), EXISTS (SELECT 1 FROM "
            + table
            + " WHERE name = ?), (SELECT instance FROM claimed) IS DISTINCT FROM ?";
    String ms = bound(timeoutMs);
    Object[] params = {name, ms, ms, holder, instance, leaseMs, name, instance};
    return lostRaceAs(
        c,
        new ClaimResult(null, true),
        () ->
            LeaseSql.first(
                c,
                sql,
                rs -> new ClaimResult(nullableLong(rs, 1), rs.getBoolean(2), rs.getBoolean(3)),
                params));
  }

  @Override
  public boolean renewStep(
      Connection c, String name, String holder, long term, long leaseMs, long timeoutMs)
      throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND term = ? AND "
            + BOUND
            + " AND expires_at_ms > "
            + clock;
    String ms = bound(timeoutMs);
    return LeaseSql.updateOne(c, sql, leaseMs, name, holder, term, ms, ms);
  }

  @Override
  public boolean releaseStep(Connection c, String name, String holder, long term, long timeoutMs)
      throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET expires_at_ms = 0, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND term = ? AND "
            + BOUND;
    String ms = bound(timeoutMs);
    return LeaseSql.updateOne(c, sql, name, holder, term, ms, ms);
  }

  /**
   * One UPDATE for the whole batch whatever its size (three array parameters, so the text and its
   * prepared plan never change), returning the rows it renewed.
   */
  @Override
  public Set<Held> renewAll(Connection c, List<Held> leases, long leaseMs, long timeoutMs)
      throws SQLException {
    checkBatch(leases);
    String sql =
        "UPDATE "
            + table
            + " t SET expires_at_ms = "
            + clock
            + " + ?, revision = t.revision + 1"
            + " FROM unnest(?::varchar[], ?::varchar[], ?::bigint[]) AS k(name, holder, term)"
            + " WHERE t.name = k.name AND t.holder = k.holder AND t.term = k.term AND "
            + BOUND
            + " AND t.expires_at_ms > "
            + clock
            + " RETURNING t.name, t.holder, t.term";
    String ms = bound(timeoutMs);
    return new HashSet<>(
        LeaseSql.query(c, sql, LeaseSql::held, leaseMs, new HeldArrays(leases), ms, ms));
  }

  /**
   * One UPDATE for the whole batch, as {@link #renewAll}: three array parameters (the text and its
   * plan never change with the batch's size), the step's bounds inside the WHERE.
   */
  @Override
  public int releaseAll(Connection c, List<Held> leases, long timeoutMs) throws SQLException {
    checkBatch(leases);
    String sql =
        "UPDATE "
            + table
            + " t SET expires_at_ms = 0, revision = t.revision + 1"
            + " FROM unnest(?::varchar[], ?::varchar[], ?::bigint[]) AS k(name, holder, term)"
            + " WHERE t.name = k.name AND t.holder = k.holder AND t.term = k.term AND "
            + BOUND;
    String ms = bound(timeoutMs);
    return LeaseSql.update(c, sql, new HeldArrays(leases), ms, ms);
  }

  /**
   * {@code <table> t SET ...}: what every step that gives the row to a new holder sets (a claim, a
   * transfer, a schedule's claim): the holder, the instance and the expiry (three parameters, in
   * that order), the next term and the revision; the caller adds the rest and the {@code FROM}.
   */
  private String giveRow() {
    return table
        + " t SET holder = ?, instance = ?, term = "
        + nextTerm("t.term")
        + ", expires_at_ms = "
        + clock
        + " + ?, revision = t.revision + 1";
  }

  /**
   * The claim locks the row {@code FOR UPDATE} before it changes it. A plain UPDATE takes only
   * {@code FOR NO KEY UPDATE}, which does not conflict with the {@code FOR KEY SHARE} of a strict
   * verify (measured: it went through while a verified transaction was open); {@code FOR UPDATE}
   * conflicts with it, so the claim of term t+1 waits for every transaction verified under term t.
   * After the wait, READ COMMITTED re-checks the WHERE clause against the newest row version, so a
   * renewal that got in first makes the claim find nothing.
   */
  @Override
  public Claimed claim(Connection c, String name, String holder, String instance, long leaseMs)
      throws SQLException {
    String sql =
        "WITH expired AS (SELECT name FROM "
            + table
            + " WHERE name = ? AND expires_at_ms <= "
            + clock
            + " FOR UPDATE)"
            + " UPDATE "
            + giveRow()
            + " FROM expired WHERE t.name = expired.name"
            + " RETURNING t.term, t.expires_at_ms";
    return LeaseSql.first(
        c,
        sql,
        rs -> new Claimed(rs.getLong(1), rs.getLong(2), rs.getLong(2) - leaseMs),
        name,
        holder,
        instance,
        leaseMs);
  }

  /**
   * Strict: {@code FOR KEY SHARE}, not {@code FOR SHARE}. Measured on PostgreSQL 15 with 16 clients
   * of back-to-back verified transactions, overlapping {@code FOR SHARE} lockers starved the
   * holder's renewal UPDATE for the whole load (10.6 s); with {@code FOR KEY SHARE} renewals took
   * at most 4.4 ms, and the {@code FOR UPDATE} of the claim still waits for it. The {@code
   * idle_in_transaction_session_timeout} set LOCAL in the select list (no extra round trip) makes
   * the server end a paused holder's session, so it cannot delay a takeover without bound.
   *
   * <p>The refusal: an aggregate over the matching rows always yields one row, and when none
   * matched its CASE casts a text carrying {@link #REFUSAL_TEXT} (the marker and this process's
   * nonce) to bigint, which fails ({@code 22P02 invalid input syntax for type bigint: "LF001 lease
   * not held <nonce>: 0"}). The text is joined to {@code count(*)}, so the planner cannot fold the
   * cast into a constant and fail while planning a verify that would match. The locking clause sits
   * in a subquery: PostgreSQL refuses {@code FOR KEY SHARE} together with an aggregate, and on the
   * nullable side of an outer join.
   */
  @Override
  public String verifySql(boolean strict) {
    if (!strict) {
      return "SELECT " + refusingTerm() + " FROM " + table + " v WHERE " + matches();
    }
    return "SELECT "
        + refusingTerm()
        + ", pg_catalog.set_config('idle_in_transaction_session_timeout', ?, true)"
        + " FROM (SELECT term FROM "
        + table
        + " WHERE "
        + matches()
        + " FOR KEY SHARE) v";
  }

  /** Strict: no expiry (see {@link Dialect#commitProofSql}); FOR KEY SHARE taken again. */
  @Override
  public String commitProofSql(boolean strict) {
    if (!strict) {
      return verifySql(false);
    }
    return "SELECT "
        + refusingTerm()
        + ", pg_catalog.set_config('idle_in_transaction_session_timeout', ?, true)"
        + " FROM (SELECT term FROM "
        + table
        + " WHERE name "
        + EQ
        + " ? AND holder "
        + EQ
        + " ? AND term "
        + EQ
        + " ? FOR KEY SHARE) v";
  }

  /**
   * The verify's operators and functions are named in {@code pg_catalog}: a session whose {@code
   * search_path} puts a schema of its own before {@code pg_catalog} could otherwise define an
   * {@code =} or a {@code count} there that the verify would call instead (operators and functions
   * are resolved through the search path, and {@code pg_temp} never for them).
   */
  private static final String EQ = "OPERATOR(pg_catalog.=)";

  private static String refusingTerm() {
    return "CASE WHEN pg_catalog.count(*) "
        + EQ
        + " 1 THEN pg_catalog.min(v.term) ELSE CAST('"
        + REFUSAL_TEXT
        + ": ' OPERATOR(pg_catalog.||) pg_catalog.count(*) AS bigint) END AS term";
  }

  private String matches() {
    return "name "
        + EQ
        + " ? AND holder "
        + EQ
        + " ? AND term "
        + EQ
        + " ? AND expires_at_ms OPERATOR(pg_catalog.>) "
        + clock;
  }

  @Override
  public String clientCheckedVerifySql(boolean strict) {
    if (!strict) {
      return "SELECT term FROM " + table + " WHERE " + matches();
    }
    return "SELECT term, pg_catalog.set_config('idle_in_transaction_session_timeout', ?, true)"
        + " FROM "
        + table
        + " WHERE "
        + matches()
        + " FOR KEY SHARE";
  }

  /** The strict verify's first parameter is the idle-in-transaction bound, in ms. */
  @Override
  public List<Object> verifyParameters(
      String name, String holder, long term, boolean strict, long idleInTransactionMs) {
    List<Object> values = new ArrayList<>(4);
    if (strict) {
      values.add(Long.toString(Math.max(1, idleInTransactionMs)));
    }
    values.add(name);
    values.add(holder);
    values.add(term);
    return values;
  }

  // ---- transfer ---------------------------------------------------------------------------------

  /**
   * The transfer locks the row {@code FOR UPDATE} in a CTE, as {@link #claimStep} does: a plain
   * UPDATE takes only {@code FOR NO KEY UPDATE}, which does not wait for the {@code FOR KEY SHARE}
   * of a strict verify, so the old holder's verified transactions could commit after term t+1. With
   * it the transfer waits for them; READ COMMITTED then re-checks holder, term and expiry against
   * the newest row version. A serialization failure (a pool defaulting to REPEATABLE READ) means
   * the row changed under it: not transferred.
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
        "WITH held AS (SELECT name FROM "
            + table
            + " WHERE name = ? AND holder = ? AND term = ? AND "
            + BOUND
            + " AND expires_at_ms > "
            + clock
            + rules.postgresTransferRowLock()
            + ")"
            + " UPDATE "
            + giveRow()
            + " FROM held WHERE t.name = held.name RETURNING t.term";
    String ms = bound(timeoutMs);
    Object[] params = {name, holder, term, ms, ms, TRANSFER_PENDING, successor, adoptWithinMs};
    return lostRaceAs(c, null, () -> LeaseSql.first(c, sql, rs -> rs.getLong(1), params));
  }

  /**
   * One statement for the whole batch, as {@link #transferStep}: the CTE locks the rows {@code FOR
   * UPDATE} (which waits for the {@code FOR KEY SHARE} of strict verifies, so no transaction of
   * term t commits after its term t+1), READ COMMITTED re-checks holder, term and expiry of each
   * row it waited for; three array parameters as {@link #releaseAll}. A serialization failure (a
   * pool defaulting to REPEATABLE READ) transfers nothing.
   */
  @Override
  public Map<String, Long> transferAll(
      Connection c, List<Held> leases, String successor, long adoptWithinMs, long timeoutMs)
      throws SQLException {
    checkBatch(leases);
    String sql =
        "WITH held AS (SELECT t.name FROM "
            + table
            + " t JOIN unnest(?::varchar[], ?::varchar[], ?::bigint[]) AS k(name, holder, term)"
            + " ON t.name = k.name AND t.holder = k.holder AND t.term = k.term WHERE "
            + BOUND
            + " AND t.expires_at_ms > "
            + clock
            + " ORDER BY t.name FOR UPDATE OF t)"
            + " UPDATE "
            + giveRow()
            + " FROM held WHERE t.name = held.name RETURNING t.name, t.term";
    String ms = bound(timeoutMs);
    Object[] params = {new HeldArrays(leases), ms, ms, TRANSFER_PENDING, successor, adoptWithinMs};
    return lostRaceAs(
        c,
        new HashMap<>(),
        () ->
            termsByName(
                LeaseSql.query(c, sql, rs -> Map.entry(rs.getString(1), rs.getLong(2)), params)));
  }

  @Override
  public Long adoptStep(
      Connection c, String name, String instance, String holder, long leaseMs, long timeoutMs)
      throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET holder = ?, expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND instance = ? AND "
            + BOUND
            + " AND expires_at_ms > "
            + clock
            + " RETURNING term";
    String ms = bound(timeoutMs);
    Object[] params = {holder, leaseMs, name, TRANSFER_PENDING, instance, ms, ms};
    return lostRaceAs(c, null, () -> LeaseSql.first(c, sql, rs -> rs.getLong(1), params));
  }

  // ---- scheduler slots ------------------------------------------------------------------------

  /**
   * One statement. The CTE locks the row {@code FOR UPDATE} for the same reason as {@link #claim}
   * (the claim of a new term waits for transactions a strict verify let in), and it returns the row
   * as it was, so the claim can report the unfinished instant it gives up. If the CTE waited for a
   * lock, READ COMMITTED re-checks its WHERE against the newest row version, so two replicas
   * claiming the same instant cannot both succeed: the second finds the instant no longer later
   * than the last.
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
    String sql =
        "WITH due AS (SELECT name, slot_ms, unfinished_slot_ms, instance FROM "
            + table
            + " WHERE name = ? AND expires_at_ms <= "
            + clock
            + (requireLater ? " AND (slot_ms IS NULL OR slot_ms < ?)" : "")
            + " AND ? <= "
            + clock
            + " FOR UPDATE)"
            + " UPDATE "
            + giveRow()
            + ","
            + " slot_ms = ?, unfinished_slot_ms = ?, rerun_slot_ms = NULL"
            + " FROM due WHERE t.name = due.name"
            + " RETURNING t.term, due.slot_ms, due.unfinished_slot_ms, due.instance";
    List<Object> params = new ArrayList<>(List.of(name));
    if (requireLater) {
      params.add(instantMs);
    }
    params.addAll(List.of(instantMs, holder, instance, leaseMs, instantMs, instantMs));
    return LeaseSql.first(
        c,
        sql,
        rs ->
            new SlotClaimed(
                rs.getLong(1),
                nullableLong(rs, 2),
                nullableLong(rs, 3),
                !instance.equals(rs.getString(4))),
        params.toArray());
  }

  /**
   * Like {@link #claimSlot}: locked {@code FOR UPDATE} in the CTE, the rerun recorded in the row.
   */
  @Override
  public Long claimSlotAgain(
      Connection c,
      String name,
      String holder,
      String instance,
      long leaseMs,
      long instantMs,
      boolean once)
      throws SQLException {
    String sql =
        "WITH cut AS (SELECT name FROM "
            + table
            + " WHERE name = ? AND expires_at_ms <= "
            + clock
            + " AND unfinished_slot_ms = ?"
            + (once ? " AND (rerun_slot_ms IS NULL OR rerun_slot_ms <> unfinished_slot_ms)" : "")
            + " FOR UPDATE)"
            + " UPDATE "
            + giveRow()
            + ","
            + " rerun_slot_ms = t.unfinished_slot_ms"
            + " FROM cut WHERE t.name = cut.name RETURNING t.term";
    return LeaseSql.first(c, sql, rs -> rs.getLong(1), name, instantMs, holder, instance, leaseMs);
  }
}
