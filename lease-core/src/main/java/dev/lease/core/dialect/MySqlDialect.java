package dev.lease.core.dialect;

import dev.lease.core.dialect.LeaseSql.HeldRows;
import dev.lease.core.internal.SqlRules;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** MySQL 8 and MariaDB 10.6 or later (InnoDB), through MySQL Connector/J or MariaDB Connector/J. */
final class MySqlDialect extends StandardDialect {

  /**
   * {@code UTC_TIMESTAMP(6)} through {@code TIMESTAMPDIFF} is free of the session time zone, unlike
   * {@code UNIX_TIMESTAMP(NOW(3))}, which converts through the session zone and can jump around a
   * DST change (MySQL manual, UNIX_TIMESTAMP). Lease sessions are also pinned to UTC (see {@link
   * #inLeaseSession}); the verify runs on the user's own connection, whose zone we must not touch,
   * so the expression itself has to be zone-free. Like NOW(), it is the statement's start.
   */
  private static final String CLOCK =
      "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";

  /** {@link #CLOCK} in microseconds. */
  private static final String CLOCK_MICROS =
      "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";

  private final boolean mariadb;

  MySqlDialect(String table, String clockFunction, boolean mariadb, SqlRules rules) {
    super(
        table,
        clockFunction != null ? clockFunction : CLOCK,
        clockFunction != null ? "(" + clockFunction + " * 1000)" : CLOCK_MICROS,
        rules);
    this.mariadb = mariadb;
  }

  /**
   * The partition every lease statement names. A session's temporary table of the same name shadows
   * the base table even when the name is qualified with its database (MySQL manual, "CREATE
   * TEMPORARY TABLE"; so does a view's name), but a temporary table cannot be partitioned ({@code
   * ER_PARTITION_NO_TEMPORARY}), and {@code PARTITION (p0)} on a table that is not fails ({@code
   * 1747 PARTITION () clause on non partitioned table}): the reference reaches the one base table
   * or fails, whatever the session created. Measured on MariaDB 10.11: a temporary copy made with
   * {@code CREATE TEMPORARY TABLE ... AS SELECT} or {@code LIKE} is refused with 1747.
   */
  static final String PARTITION = "p0";

  /** {@code 1747 PARTITION () clause on non partitioned table}. */
  static final int ER_PARTITION_CLAUSE_ON_NONPARTITIONED = 1747;

  /**
   * The database of the configured name ({@code db.table}) or the session's current one, quoted,
   * and the table's one partition named ({@link #PARTITION}): {@code `db`.`leases` PARTITION (p0)}.
   * {@code USE} or {@code setCatalog} on a fenced session no longer changes what the verify reads,
   * and a temporary table of the same name fails it.
   */
  @Override
  public void resolve(Connection c) throws SQLException {
    int dot = name.indexOf('.');
    String database =
        dot >= 0
            ? name.substring(0, dot)
            : LeaseSql.firstPlain(c, "SELECT DATABASE()", rs -> rs.getString(1));
    if (database == null) {
      throw new SQLException(
          "the lease table "
              + name
              + " names no database and the connection has none selected; put the database in the"
              + " JDBC URL or name the table as database.table",
          "3D000");
    }
    String relation = dot < 0 ? name : name.substring(dot + 1);
    table = quoted(database) + "." + quoted(relation) + " PARTITION (" + PARTITION + ")";
  }

  private static String quoted(String identifier) {
    return '`' + identifier.replace("`", "``") + '`';
  }

  /**
   * A lease table of an earlier version is not partitioned: the table check ({@link #checkTable},
   * through {@link #reference()}) fails with 1747, and this partitions it into its one partition.
   * On a small table a copy of a few milliseconds; the name stays primary key.
   */
  @Override
  public List<String> upgrade(SQLException e) {
    if (e.getErrorCode() != ER_PARTITION_CLAUSE_ON_NONPARTITIONED) {
      return List.of();
    }
    return List.of("ALTER TABLE " + name + " PARTITION BY KEY (name) PARTITIONS 1");
  }

  @Override
  public String product() {
    return mariadb ? "MariaDB" : "MySQL";
  }

  @Override
  public String tableByPrimaryKey() {
    return table + rules.mySqlBatchIndexHint();
  }

  /**
   * utf8mb4_bin: lease names compare exactly, as on the other databases. Partitioned into one
   * partition, which every statement names ({@link #PARTITION}).
   */
  @Override
  public List<String> ddl() {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + name
            + " ("
            + "name varchar("
            + NAME_WIDTH
            + ") CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, "
            + "holder varchar("
            + HOLDER_WIDTH
            + ") CHARACTER SET ascii NOT NULL DEFAULT '', "
            + "instance varchar("
            + INSTANCE_WIDTH
            + ") CHARACTER SET utf8mb4 NOT NULL DEFAULT '', "
            + "term bigint NOT NULL DEFAULT 0, "
            + "expires_at_ms bigint NOT NULL DEFAULT 0, "
            + "revision bigint NOT NULL DEFAULT 0, "
            + "slot_ms bigint NULL, "
            + "unfinished_slot_ms bigint NULL, "
            + "rerun_slot_ms bigint NULL, "
            + "PRIMARY KEY (name)) ENGINE=InnoDB"
            // one partition: what the statements' reference names (see PARTITION)
            + " PARTITION BY KEY (name) PARTITIONS 1");
  }

  @Override
  public boolean isMissingTable(SQLException e) {
    return e.getErrorCode() == 1146 || "42S02".equals(e.getSQLState());
  }

  /**
   * Lease statements run in READ COMMITTED: an UPDATE then reads the newest committed row
   * ("semi-consistent read") and waits for a strict verify's share lock only when the row matches,
   * so a claimer polling a live lease never queues behind the holder's transactions; REPEATABLE
   * READ would lock the row before evaluating the WHERE. The session is pinned to UTC, its session
   * clock reset ({@code timestamp = DEFAULT}: a frozen session clock would freeze the lease clock)
   * and its lock wait bounded for the attempt; the time zone and lock wait are put back afterwards,
   * since the connection may be a pooled one the application also uses. Their old values are read
   * into Java, not into {@code @lease_*} user variables, so the session keeps nothing of ours.
   */
  @Override
  public <T> T inLeaseSession(Connection c, long timeoutMs, SqlCall<T> call) throws SQLException {
    int isolation = c.getTransactionIsolation();
    boolean autoCommit = c.getAutoCommit();
    long lockWaitSeconds = Math.max(1, (timeoutMs + 999) / 1000);
    String settings =
        "time_zone = '+00:00', timestamp = DEFAULT, innodb_lock_wait_timeout = "
            + lockWaitSeconds
            // a metadata lock (a DDL or LOCK TABLES elsewhere on the lease table) waits for
            // lock_wait_timeout, a day by default: bounded like the row lock (issue 38)
            + ", lock_wait_timeout = "
            + lockWaitSeconds
            // MariaDB: a holder paused between its UPDATE and COMMIT would keep the lease row
            // locked (no successor could claim) until it resumes; the server ends such a
            // session (PausedLeaseSessionTest). MySQL 8 has no such bound.
            + (mariadb ? ", idle_transaction_timeout = " + lockWaitSeconds : "");
    SqlRules.SessionRestore restoreSettings =
        rules.saveMySqlSession(c, settings, () -> saveInJava(c, settings));
    Throwable failure = null;
    try {
      if (isolation != Connection.TRANSACTION_READ_COMMITTED) {
        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
      }
      if (autoCommit) {
        c.setAutoCommit(false);
      }
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
          },
          () -> {
            if (isolation != Connection.TRANSACTION_READ_COMMITTED) {
              c.setTransactionIsolation(isolation);
            }
          },
          restoreSettings::run);
    }
  }

  /**
   * Reads the session's settings into Java, sets the lease session's {@code settings}; returns the
   * restore that binds the old values back.
   */
  private SqlRules.SessionRestore saveInJava(Connection c, String settings) throws SQLException {
    Object[] saved =
        LeaseSql.firstPlain(
            c,
            "SELECT @@session.time_zone, @@session.innodb_lock_wait_timeout,"
                + " @@session.lock_wait_timeout"
                + (mariadb ? ", @@session.idle_transaction_timeout" : ""),
            rs ->
                new Object[] {
                  rs.getString(1), rs.getLong(2), rs.getLong(3), mariadb ? rs.getLong(4) : 0L
                });
    String zone = (String) saved[0];
    long lockWait = (Long) saved[1];
    long metadataLockWait = (Long) saved[2];
    long idle = (Long) saved[3];
    LeaseSql.executePlain(c, "SET " + settings);
    return () -> restoreSettings(c, zone, lockWait, metadataLockWait, idle);
  }

  private void restoreSettings(
      Connection c, String zone, long lockWait, long metadataLockWait, long idle)
      throws SQLException {
    // bound, not concatenated: a named time zone is the server's text
    if (mariadb) {
      LeaseSql.execute(
          c,
          "SET time_zone = ?, innodb_lock_wait_timeout = ?, lock_wait_timeout = ?,"
              + " idle_transaction_timeout = ?",
          zone,
          lockWait,
          metadataLockWait,
          idle);
    } else {
      LeaseSql.execute(
          c,
          "SET time_zone = ?, innodb_lock_wait_timeout = ?, lock_wait_timeout = ?",
          zone,
          lockWait,
          metadataLockWait);
    }
  }

  /**
   * INSERT IGNORE, never INSERT ... ON DUPLICATE KEY UPDATE: on a duplicate it takes only a shared
   * lock, compatible with strict verifies, and its affected-row count is never used.
   */
  @Override
  String createRowSql() {
    return "INSERT IGNORE INTO " + table + " (name, term) VALUES (?, " + startTerm() + ")";
  }

  /**
   * MariaDB's steps bound themselves: {@code SET STATEMENT ... FOR} sets the lock wait, the
   * statement time and the UTC time zone for this one statement only (MariaDB manual, SET
   * STATEMENT), so the session is never changed. MySQL 8 has no per-statement lock-wait bound
   * ({@code SET_VAR} does not take {@code innodb_lock_wait_timeout}): its steps keep {@link
   * #inLeaseSession}.
   */
  @Override
  String stepPrefix(long timeoutMs) {
    if (!mariadb) {
      return "";
    }
    long ms = Math.max(1, timeoutMs);
    long lockWaitSeconds = Math.max(1, (ms + 999) / 1000);
    return "SET STATEMENT time_zone = '+00:00', innodb_lock_wait_timeout = "
        + lockWaitSeconds
        + ", max_statement_time = "
        + (ms / 1000)
        + "."
        + String.format(Locale.ROOT, "%03d", ms % 1000)
        + " FOR ";
  }

  /**
   * MariaDB steps: {@code SYSDATE(6)} in the statement's pinned UTC zone. Unlike {@code
   * UTC_TIMESTAMP}, {@code SYSDATE} ignores a frozen session clock ({@code SET timestamp}), which
   * the old session setup reset with an extra statement (MariaDB manual, SYSDATE); it is read at
   * each use, so the expressions of one statement may differ by microseconds.
   */
  @Override
  String stepClock() {
    if (!mariadb || !clock.equals(CLOCK)) {
      return clock;
    }
    return "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', SYSDATE(6)) DIV 1000)";
  }

  /** {@link #stepClock()} in microseconds. */
  @Override
  String stepClockMicros() {
    if (!mariadb || !clock.equals(CLOCK)) {
      return clockMicros;
    }
    return "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', SYSDATE(6))";
  }

  @Override
  public <T> T inStep(Connection c, long timeoutMs, StepCall<T> call) throws SQLException {
    if (!mariadb) {
      return inLeaseSession(c, timeoutMs, conn -> call.call(conn, timeoutMs));
    }
    return super.inStep(c, timeoutMs, call);
  }

  /**
   * One UPDATE. {@code LAST_INSERT_ID(2 × new term + (previous instance is another))} puts the new
   * term, and whether the name's previous term was another instance's, into the statement's OK
   * packet, which both Connector/Js hand out as the generated key (checked on MySQL Connector/J 9.5
   * and MariaDB Connector/J 3.5), so nothing is read back; the term column itself gets the new term
   * ({@code LAST_INSERT_ID(...) DIV 2}: one evaluation, since MariaDB's step clock {@code
   * SYSDATE(6)} is read at each use). The term's assignment comes before {@code instance}'s, so it
   * compares the instance the row had (single-table UPDATE assignments run left to right; under
   * MariaDB's {@code SIMULTANEOUS_ASSIGNMENT} every one sees the old row anyway), and after {@code
   * expires_at_ms}'s: a stored function called after {@code LAST_INSERT_ID(expr)} (the tests'
   * clock) resets the OK packet's id. It changes {@code term}, so 1 means claimed whether the
   * driver counts found or changed rows. The UPDATE takes an exclusive lock on a row it claims, so
   * it waits for every transaction whose strict verify holds a share lock on it. In the session's
   * own isolation: under READ COMMITTED a claimer of a live lease does not wait for the holder's
   * transactions (semi-consistent read); under REPEATABLE READ, InnoDB locks the row before it
   * evaluates the WHERE, so such a claim waits for the holder's transactions in flight (bounded by
   * the lock wait) and then finds the lease held. The count cannot tell a held row from a missing
   * one: the caller creates the row when a claim finds nothing.
   *
   * <p>Side effect: {@code LAST_INSERT_ID()} of the borrowed session then returns twice the term
   * (plus one) (a value only the statement right after one's own INSERT may rely on).
   */
  @Override
  public ClaimResult claimStep(
      Connection c, String name, String holder, String instance, long leaseMs, long timeoutMs)
      throws SQLException {
    String clk = stepClock();
    String next = nextTerm("term", stepClockMicros());
    String update =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + tableByPrimaryKey()
            + " SET expires_at_ms = "
            + clk
            + " + ?, term = LAST_INSERT_ID("
            + next
            + " * 2 + (instance <> ?)) DIV 2, holder = ?, instance = ?, revision = revision + 1"
            + " WHERE name = ? AND expires_at_ms <= "
            + clk;
    Long packed =
        LeaseSql.generatedTerm(
            c,
            update,
            "the claim of lease row '" + name + "'",
            leaseMs,
            instance,
            holder,
            instance,
            name);
    return packed == null
        ? new ClaimResult(null, null)
        : new ClaimResult(packed >> 1, true, (packed & 1) != 0);
  }

  /**
   * A plain UPDATE that changes {@code term}, so 1 means claimed whether the driver counts found or
   * changed rows (Connector/J sets CLIENT_FOUND_ROWS by default); then the new row is read back in
   * the same transaction (MySQL has no UPDATE ... RETURNING). The UPDATE takes an exclusive lock,
   * so it waits for every transaction whose strict verify holds a share lock on the row.
   */
  @Override
  public Claimed claim(Connection c, String name, String holder, String instance, long leaseMs)
      throws SQLException {
    String update =
        "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = "
            + nextTerm("term")
            + ","
            + " expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1"
            + " WHERE name = ? AND expires_at_ms <= "
            + clock;
    if (!LeaseSql.updateOne(c, update, holder, instance, leaseMs, name)) {
      return null;
    }
    Claimed claimed =
        LeaseSql.first(
            c,
            "SELECT term, expires_at_ms FROM " + table + " WHERE name = ? AND holder = ?",
            rs -> new Claimed(rs.getLong(1), rs.getLong(2), rs.getLong(2) - leaseMs),
            name,
            holder);
    if (claimed == null) {
      throw new SQLException("claimed lease row '" + name + "' vanished inside the claim");
    }
    return claimed;
  }

  /**
   * Strict: {@code LOCK IN SHARE MODE}, which MySQL 8 and MariaDB both accept (MariaDB rejects
   * {@code FOR SHARE}). InnoDB queues new share requests behind a waiting writer, so a renewal
   * waits only for transactions already in flight. Locking reads see the newest committed row
   * whatever the transaction's isolation level.
   *
   * <p>The refusal: the aggregate always yields one row, and when no row matched its CASE adds
   * {@code COUNT(*)} (0), the largest BIGINT and the length of a text carrying {@link
   * #REFUSAL_TEXT} (the marker and this process's nonce), which overflows: {@code 1690 (22003)
   * BIGINT value is out of range in 'count(0) + 9223372036854775807 + octet_length('LF001 lease not
   * held <nonce>')'}. Chosen over a scalar subquery returning two rows ({@code 1242 Subquery
   * returns more than 1 row}) because the server prints the expression, marker included, into the
   * message. The sum starts from {@code COUNT(*)}, so nothing in it is constant. A locking read may
   * aggregate (the rows it reads are locked as without one).
   */
  @Override
  public String verifySql(boolean strict) {
    return "SELECT CASE WHEN COUNT(*) = 1 THEN MAX(term) ELSE COUNT(*) + 9223372036854775807"
        + " + LENGTH('"
        + REFUSAL_TEXT
        + "') END AS term"
        + (strict ? sessionBoundColumns() : "")
        + matching(strict);
  }

  @Override
  public String clientCheckedVerifySql(boolean strict) {
    return "SELECT term" + (strict ? sessionBoundColumns() : "") + matching(strict);
  }

  /**
   * The verify's row: this holder at this term, not expired; strict locks it in share mode. {@code
   * LIMIT 1} (one row at most anyway) overrides the session's {@code sql_select_limit}: at 0 the
   * refusing verify returned an empty result instead of raising its error, and a statement carried
   * after it in one text then ran (found by review).
   */
  private String matching(boolean strict) {
    return " FROM "
        + table
        + " WHERE name = ? AND holder = ? AND term = ?"
        + " AND expires_at_ms > "
        + clock
        + " LIMIT 1"
        + (strict ? " LOCK IN SHARE MODE" : "");
  }

  /**
   * Strict: the session's current bounds ride along in the verify's select list (no extra round
   * trip), so lease-jdbc sees when a pool's session reset dropped them and puts them back only
   * then, and knows what to restore for borrowers without a lease.
   */
  private String sessionBoundColumns() {
    return ", @@session.innodb_lock_wait_timeout"
        + (mariadb ? ", @@session.idle_transaction_timeout" : "");
  }

  @Override
  public void readSessionBounds(ResultSet rs, long[] out) throws SQLException {
    out[0] = rs.getLong(2);
    out[1] = mariadb ? rs.getLong(3) : -1;
  }

  /**
   * Session bounds for strict fencing: the lock wait of the verify and of the business statements
   * after it, and (MariaDB only) the idle time inside a transaction after which the server ends the
   * session, so a paused holder cannot keep its share lock for ever. Both in whole seconds.
   */
  @Override
  public List<String> strictSessionBounds(long idleInTransactionMs, long lockWaitMs) {
    long lockWait = Math.max(1, (lockWaitMs + 999) / 1000);
    if (!mariadb) {
      return List.of("SET SESSION innodb_lock_wait_timeout = " + lockWait);
    }
    long idle = Math.max(1, (idleInTransactionMs + 999) / 1000);
    return List.of(
        "SET SESSION innodb_lock_wait_timeout = "
            + lockWait
            + ", idle_transaction_timeout = "
            + idle);
  }

  /**
   * The start of every step that gives a row to a new holder (a claim, a transfer): sets the
   * holder, the instance and the expiry (three parameters, in that order) and bumps the revision;
   * the caller adds the term and the {@code WHERE}.
   */
  private String giveRow(long timeoutMs, String clk) {
    return stepPrefix(timeoutMs)
        + "UPDATE "
        + tableByPrimaryKey()
        + " SET holder = ?, instance = ?, expires_at_ms = "
        + clk
        + " + ?, revision = revision + 1,";
  }

  // ---- transfer ---------------------------------------------------------------------------------

  /**
   * One UPDATE, the new term read from the OK packet through {@code LAST_INSERT_ID} as in {@link
   * #claimStep}. It takes an exclusive lock on the row it matches, so it waits for every
   * transaction whose strict verify holds a share lock on it, then re-reads the newest committed
   * row (READ COMMITTED) before it changes it.
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
    String clk = stepClock();
    String update =
        giveRow(timeoutMs, clk)
            + " term = LAST_INSERT_ID("
            + nextTerm("term", stepClockMicros())
            + ")"
            + " WHERE name = ? AND holder = ? AND term = ? AND expires_at_ms > "
            + clk;
    return LeaseSql.generatedTerm(
        c,
        update,
        "the transfer of lease row '" + name + "'",
        TRANSFER_PENDING,
        successor,
        adoptWithinMs,
        name,
        holder,
        term);
  }

  /**
   * One UPDATE of the whole batch, exclusive row locks as {@link #transferStep} (so it waits for
   * the strict verifies' share locks). No RETURNING: the database clock (µs) is read first and
   * bound as the floor of every new term, so each new term is {@code max(term + 1, that clock)},
   * known without reading the rows back when the UPDATE changed every row; when it changed fewer,
   * one read finds which rows are at the successor at exactly that term (a row at that term and
   * instance can only be this transfer's: terms never repeat, and a later claim or transfer would
   * have a higher term).
   */
  @Override
  public Map<String, Long> transferAll(
      Connection c, List<Held> leases, String successor, long adoptWithinMs, long timeoutMs)
      throws SQLException {
    checkBatch(leases);
    String clk = stepClock();
    long floor =
        LeaseSql.first(
            c, stepPrefix(timeoutMs) + "SELECT " + stepClockMicros(), rs -> rs.getLong(1));
    String update =
        giveRow(timeoutMs, clk)
            + " term = "
            + nextTerm("term", "?")
            + " WHERE "
            + heldMatch(leases.size())
            + " AND expires_at_ms > "
            + clk;
    int n =
        LeaseSql.update(
            c, update, TRANSFER_PENDING, successor, adoptWithinMs, floor, new HeldRows(leases));
    Map<String, Long> wanted = new HashMap<>();
    for (Held h : leases) {
      wanted.put(h.name(), Math.max(h.term() + 1, floor));
    }
    if (n == leases.size()) {
      return wanted;
    }
    Map<String, Long> terms = new HashMap<>();
    if (n == 0) {
      return terms;
    }
    String read =
        stepPrefix(timeoutMs)
            + "SELECT name, term FROM "
            + tableByPrimaryKey()
            + " WHERE name IN ("
            + "?, ".repeat(leases.size() - 1)
            + "?) AND instance = ?";
    for (Map.Entry<String, Long> row :
        LeaseSql.query(
            c,
            read,
            rs -> Map.entry(rs.getString(1), rs.getLong(2)),
            LeaseSql.names(leases),
            successor)) {
      if (wanted.get(row.getKey()) != null && wanted.get(row.getKey()) == (long) row.getValue()) {
        terms.put(row.getKey(), row.getValue());
      }
    }
    return terms;
  }

  /**
   * One UPDATE; {@code term = LAST_INSERT_ID(term)} hands the unchanged term back in the OK packet,
   * and {@code revision} changes, so 1 means adopted whatever rows the driver counts.
   */
  @Override
  public Long adoptStep(
      Connection c, String name, String instance, String holder, long leaseMs, long timeoutMs)
      throws SQLException {
    String clk = stepClock();
    String update =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + table
            + " SET holder = ?, expires_at_ms = "
            + clk
            + " + ?, revision = revision + 1, term = LAST_INSERT_ID(term)"
            + " WHERE name = ? AND holder = ? AND instance = ? AND expires_at_ms > "
            + clk;
    return LeaseSql.generatedTerm(
        c,
        update,
        "the adoption of lease row '" + name + "'",
        holder,
        leaseMs,
        name,
        TRANSFER_PENDING,
        instance);
  }

  // ---- scheduler slots ------------------------------------------------------------------------

  /** {@link Dialect#claimSlot}'s compare-and-set compares the slot columns with this. */
  @Override
  String nullSafeEquals() {
    return "<=>";
  }

  /** MySQL has no UPDATE ... RETURNING: the new term travels in the OK packet. */
  @Override
  String returnedTerm(String next) {
    return "LAST_INSERT_ID(" + next + ")";
  }

  @Override
  Long claimedTerm(Connection c, String update, Object[] params) throws SQLException {
    return LeaseSql.generatedTerm(c, update, "the claim of an instant", params);
  }

  /**
   * One UPDATE; it changes {@code term}, so 1 means claimed whatever rows the driver counts. The
   * new term is read back in the same transaction, as in {@link #claim}.
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
    String update =
        "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = "
            + nextTerm("term")
            + ","
            + " expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1,"
            + " rerun_slot_ms = unfinished_slot_ms"
            + " WHERE name = ? AND expires_at_ms <= "
            + clock
            + " AND unfinished_slot_ms = ?"
            + (once ? " AND (rerun_slot_ms IS NULL OR rerun_slot_ms <> unfinished_slot_ms)" : "");
    if (!LeaseSql.updateOne(c, update, holder, instance, leaseMs, name, instantMs)) {
      return null;
    }
    Long term =
        LeaseSql.first(
            c,
            "SELECT term FROM " + table + " WHERE name = ? AND holder = ?",
            rs -> rs.getLong(1),
            name,
            holder);
    if (term == null) {
      throw new SQLException("claimed lease row '" + name + "' vanished inside the claim");
    }
    return term;
  }
}
