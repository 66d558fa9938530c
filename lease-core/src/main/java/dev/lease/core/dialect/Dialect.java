package dev.lease.core.dialect;

import dev.lease.core.internal.SqlRules;
import java.math.BigInteger;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The SQL of the lease protocol for one database, readable as text, with the reason for each
 * non-obvious choice beside it. Every statement reads {@code :now} from the database server's clock
 * inside the statement ({@link #clock()}); no user value is ever concatenated into SQL (the table
 * name is a validated identifier, checked before a dialect is made).
 *
 * <p>This class is the contract: one method per statement, with what it must do. The texts are in
 * the subclasses: {@link StandardDialect} writes what every database writes the same way, and
 * {@code PostgresDialect}, {@code MySqlDialect} and {@code SqliteDialect} what differs (each
 * database's verify is its {@code verifySql}). They name the values that go into each text, in
 * order; {@link LeaseSql} binds and runs them the same way for every database. Choosing the dialect
 * for a connection is {@link DialectDetection}'s.
 *
 * <p>Internal: lease-core's manager and scheduler, and lease-jdbc through {@code LeaseInternals},
 * use it; it may change in any release.
 */
public abstract class Dialect {

  /** Column widths of the lease table; the DDL of every dialect uses these. */
  public static final int NAME_WIDTH = 128;

  public static final int INSTANCE_WIDTH = 128;
  public static final int HOLDER_WIDTH = 64;

  /** Result of a successful claim: the new term and the expiry the database recorded. */
  public record Claimed(long term, long expiresAtMs, long databaseNowMs) {}

  /** A unit of lease SQL run on one borrowed connection. */
  @FunctionalInterface
  public interface SqlCall<T> {
    T call(Connection c) throws SQLException;
  }

  /**
   * A lease step that runs as one statement: {@code timeoutMs} is what is left of the attempt, for
   * the bounds the statement carries in its own text.
   */
  @FunctionalInterface
  public interface StepCall<T> {
    T call(Connection c, long timeoutMs) throws SQLException;
  }

  /**
   * What one claim statement found: the new term when it claimed, else null; whether the row exists
   * (null when the statement cannot tell: MySQL and MariaDB, whose UPDATE returns only a count);
   * and, when it claimed, whether the name's previous term was another instance's (or the row new),
   * read by the same statement: a hand-over, as the Spring starter's meters count it.
   */
  public record ClaimResult(Long term, Boolean rowExists, boolean fromAnother) {

    /** Nothing claimed. */
    public ClaimResult(Long term, Boolean rowExists) {
      this(term, rowExists, true);
    }
  }

  /** One held lease of a batched renewal ({@link #renewAll}). */
  public record Held(String name, String holder, long term) {}

  /** How many leases one batched renewal statement takes ({@link #renewAll}). */
  public static final int MAX_RENEWALS_PER_STATEMENT = 1000;

  /** The lease table as configured: the name in DDL and messages. */
  final String name;

  /**
   * The lease table as the statements reach it: a reference the session cannot redefine ({@link
   * #resolve}). Until resolved, the configured name (DDL-only dialects never run statements).
   */
  String table;

  /** SQL expression: the database server's clock, UTC epoch milliseconds, as a bigint. */
  final String clock;

  /**
   * SQL expression: the database server's clock in UTC epoch microseconds (SQLite: milliseconds ×
   * 1000), the floor every new term is raised to ({@link #nextTerm}).
   */
  final String clockMicros;

  /** The pieces of SQL the negative controls break; {@link SqlRules#PRODUCTION} in production. */
  final SqlRules rules;

  Dialect(String table, String clock, String clockMicros, SqlRules rules) {
    this.name = table;
    this.table = table;
    this.clock = clock;
    this.clockMicros = clockMicros;
    this.rules = rules;
  }

  /** The lease table as configured (DDL, messages). */
  public final String table() {
    return name;
  }

  /**
   * The lease table as every statement names it once {@link #resolve} ran: schema-qualified, and on
   * MySQL/MariaDB with its partition named, so that no session object (a temporary table, a {@code
   * search_path}, {@code USE}) can stand in for it.
   */
  public final String reference() {
    return table;
  }

  /**
   * Fixes {@link #reference()} on a connection to the lease database, once, before any lease
   * statement runs: the one real lease table, by a reference the session cannot redefine.
   * PostgreSQL: the schema the name resolves to among the session's ordinary schemas (never {@code
   * pg_temp}); MySQL/MariaDB: the current database, and the table's one partition (a temporary
   * table cannot be partitioned, so {@code PARTITION (p0)} reaches only the base table); SQLite:
   * {@code main}. A session that later shadows the name with a temporary table, switches its {@code
   * search_path}, schema or database, still reaches this table.
   *
   * @throws SQLException if the database cannot say where the table is
   */
  public abstract void resolve(Connection c) throws SQLException;

  /**
   * The term a hand-over writes (claim, transfer, a slot's claim): {@code max(term + 1, database
   * clock in µs)}, so terms grow on every hand-over and never repeat, even after a failover that
   * lost claims, unless the new primary's clock is behind the lost claims by more than the time
   * since (docs/high-availability.md). Not consecutive: nothing may assume + 1.
   *
   * @param term the SQL expression of the row's current term ({@code term}, {@code t.term})
   */
  public final String nextTerm(String term) {
    return nextTerm(term, clockMicros);
  }

  /**
   * {@link #nextTerm(String)} with {@code micros} as the clock (a step's own, or a bound value).
   */
  public final String nextTerm(String term, String micros) {
    return rules.nextTerm(greatest(), term, micros);
  }

  /**
   * The SQL function of the larger of two values: {@code GREATEST}, SQLite's scalar {@code MAX}.
   */
  String greatest() {
    return "GREATEST";
  }

  /**
   * Statements that bring an existing lease table of an earlier version up to this one, when {@code
   * e} (the table check's error) says it needs them; empty otherwise. MySQL/MariaDB: the table
   * partitioned into its one partition ({@link #resolve}).
   */
  public List<String> upgrade(SQLException e) {
    return List.of();
  }

  /**
   * The lease table as a statement over a list of names writes it: the table, and on MySQL/MariaDB
   * the primary key forced ({@code FORCE INDEX (PRIMARY)}). Without it their optimizer scans the
   * whole index once the list is long (MariaDB 10.11: from a few hundred names in a table of a
   * thousand rows), and an UPDATE or a locking read that scans locks every row it passes under
   * REPEATABLE READ: a batched renewal then waits for any other holder's strict verify (its share
   * lock on its own row) and two members' batches deadlock. Forced, the statement reads and locks
   * exactly the rows it names ({@code BatchLockFootprintTest}).
   */
  public String tableByPrimaryKey() {
    return table;
  }

  /** The SQL expression of the database clock (UTC epoch milliseconds) the statements use. */
  public final String clock() {
    return clock;
  }

  /** The SQL expression of the database clock in microseconds (SQLite: milliseconds × 1000). */
  public final String clockMicros() {
    return clockMicros;
  }

  /** The SQL expression of the term a new lease row starts at (see {@code StandardDialect}). */
  public final String startTermSql() {
    return rules.startTerm(clockMicros);
  }

  /** The database's name for messages and logs: "PostgreSQL", "MySQL", "MariaDB", "SQLite". */
  public abstract String product();

  /** The statements that create the lease table if it does not exist (idempotent). */
  public abstract List<String> ddl();

  public abstract boolean isMissingTable(SQLException e);

  /**
   * Runs lease statements on {@code c} with each attempt bounded by the database's own timeouts, in
   * the isolation the dialect needs, committed at the end (or rolled back on failure).
   */
  public abstract <T> T inLeaseSession(Connection c, long timeoutMs, SqlCall<T> call)
      throws SQLException;

  /**
   * Creates the row of {@code name} once, expired, at the start term (the database clock in µs, so
   * terms never repeat: {@code StandardDialect.startTerm}); does nothing if it exists (its term
   * stays what it is).
   */
  public abstract void createRow(Connection c, String name) throws SQLException;

  /** Claims {@code name} if it is expired by the database clock; null if someone holds it. */
  public abstract Claimed claim(
      Connection c, String name, String holder, String instance, long leaseMs) throws SQLException;

  /**
   * The documented part of the text every refusing verify puts into the error the server raises
   * ({@link #verifySql}): a log reader can tell the lease's refusal from any other failure by it.
   * It is not enough to recognise a refusal: errors echo user data (a duplicate key on a value
   * holding this text), so {@link #isRefusal} looks for {@link #REFUSAL_TEXT}, which carries this
   * process's nonce, and for the SQLState the refusal raises.
   */
  public static final String REFUSAL_MARKER = "LF001 lease not held";

  /**
   * {@link #REFUSAL_MARKER} followed by a random nonce drawn once per process: what each dialect
   * puts into its refusing expression verbatim. User data cannot carry it without knowing the
   * nonce, and the verify's text stays the same for the whole process, so statement caches keep
   * working. Alphanumeric, so it needs no quoting in any SQL literal or error message.
   */
  static final String REFUSAL_TEXT =
      REFUSAL_MARKER + " " + new BigInteger(96, new SecureRandom()).setBit(96).toString(36);

  /**
   * The verify statement: selects the term when {@code holder} still holds {@code name} at {@code
   * term} by the database clock, and <b>raises an error in the server</b> when it does not, whose
   * message carries {@link #REFUSAL_TEXT} ({@link #isRefusal}). The error, not the client's reading
   * of an empty result, is what stops the transaction: nothing sent in the same round trip after it
   * runs (a statement carried along, a COMMIT), and a driver that replays the verify on a new
   * session (MariaDB Connector/J {@code transactionReplay}) gets the error too. In strict mode it
   * also takes the lock on the lease row that the claim of the next term must wait for. Its
   * parameters are {@link #verifyParameters}, in order. The failing expression depends on the rows
   * read, never on literals or parameters alone, so no planner can evaluate it ahead of the rows.
   * Where the lease row itself is missing, a dialect may return no row instead (the caller must
   * still treat an empty result as a refusal).
   */
  public abstract String verifySql(boolean strict);

  /**
   * The verify before the server refused (an empty result when the lease is not held, read by the
   * client after the round trip): kept for negative controls and comparison benchmarks only. Same
   * parameters as {@link #verifySql}.
   */
  public abstract String clientCheckedVerifySql(boolean strict);

  /**
   * The verify a commit carries as its proof (lease-jdbc sends it with the COMMIT where it can):
   * like {@link #verifySql}, same parameters. A dialect whose strict verify's lock orders every
   * claim after the commit may leave the expiry out: the row still naming this holder at this term
   * means no successor has claimed, and the lock it takes again means none can before the commit (a
   * holder paused past the expiry, whose lock made the next claim wait, still commits).
   */
  public String commitProofSql(boolean strict) {
    return verifySql(strict);
  }

  /** A text built for the table reference it names ({@link #verifyText}). */
  private record Built(String table, String text) {}

  /** {@link #verifySql} and {@link #commitProofSql}, strict and not, built once each. */
  private final Built[] texts = new Built[4];

  /**
   * {@link #verifySql}, built once per dialect and table reference: the text is fixed by the table
   * ({@link #resolve} may replace the reference) and the clock, so a transaction does not rebuild
   * it (issue 36). A race builds it twice, harmlessly.
   */
  public final String verifyText(boolean strict) {
    return built(strict, false);
  }

  /** {@link #commitProofSql}, built once per dialect and table reference ({@link #verifyText}). */
  public final String commitProofText(boolean strict) {
    return built(strict, true);
  }

  private String built(boolean strict, boolean proof) {
    int slot = (proof ? 2 : 0) + (strict ? 1 : 0);
    String ref = table;
    Built b = texts[slot];
    if (b == null || b.table() != ref) {
      b = new Built(ref, proof ? commitProofSql(strict) : verifySql(strict));
      texts[slot] = b;
    }
    return b.text();
  }

  /**
   * True if {@code e} (or an exception chained to it) is a refusing verify's error: its message
   * carries {@link #REFUSAL_TEXT} (this process's nonce, so not user data echoed in an error) and
   * it has the SQLState or error code the refusing expression raises ({@link #refusalSignature}).
   */
  public static boolean isRefusal(SQLException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (refusalSignature(t)) {
        return true;
      }
      if (t instanceof SQLException s
          && s.getNextException() != null
          && s.getNextException() != t
          && refusalSignature(s.getNextException())) {
        return true;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return false;
  }

  /**
   * The refusing expressions' own errors ({@link #verifySql} of each dialect): PostgreSQL's cast of
   * the text to bigint, {@code 22P02}; MySQL/MariaDB's BIGINT overflow, error 1690 in class 22
   * (MariaDB Connector/J passes the server's {@code 22003}; Connector/J throws it as a {@code
   * MysqlDataTruncation}, whose SQLState is {@code 22001}); SQLite's JSON path error, result code 1
   * ({@code SQLITE_ERROR}; sqlite-jdbc gives no SQLState).
   */
  private static boolean refusalSignature(Throwable t) {
    if (!(t instanceof SQLException s) || !String.valueOf(s.getMessage()).contains(REFUSAL_TEXT)) {
      return false;
    }
    String state = s.getSQLState();
    return "22P02".equals(state)
        || (s.getErrorCode() == 1690 && (state == null || state.startsWith("22")))
        || (s.getErrorCode() == 1 && state == null);
  }

  /**
   * The values of the verify statement's parameters, in order: what {@link #bindVerify} binds, for
   * callers that send the verify together with other statements.
   */
  public List<Object> verifyParameters(
      String name, String holder, long term, boolean strict, long idleInTransactionMs) {
    List<Object> values = new ArrayList<>(4);
    values.add(name);
    values.add(holder);
    values.add(term);
    return values;
  }

  /**
   * Reads the session bounds a strict verify returns besides the term (see {@link
   * #strictSessionBounds}): {@code out[0]} the lock wait, {@code out[1]} the idle-in-transaction
   * bound, in the units of the statements that set them; -1 where the database has none. The
   * default (databases whose verify carries no session bounds) leaves {@code out} unchanged.
   */
  public void readSessionBounds(ResultSet rs, long[] out) throws SQLException {}

  /**
   * Binds the parameters of {@link #verifySql} from index {@code first} on; returns the next free
   * index.
   */
  public final int bindVerify(
      PreparedStatement ps,
      int first,
      String name,
      String holder,
      long term,
      boolean strict,
      long idleInTransactionMs)
      throws SQLException {
    return LeaseSql.bind(
        null,
        ps,
        first,
        verifyParameters(name, holder, term, strict, idleInTransactionMs).toArray());
  }

  /**
   * Statements to run once on a connection before strict verifies, bounding how long a paused
   * holder's open transaction can delay a takeover; empty when the verify statement carries them.
   */
  public List<String> strictSessionBounds(long idleInTransactionMs, long lockWaitMs) {
    return List.of();
  }

  // ---- one statement per step ------------------------------------------------------------------
  //
  // Claim, renew, release and verify are each one statement and one round trip: the statement runs
  // in the connection's own autocommit (its own transaction, so no lock outlives it and nothing is
  // left open between an UPDATE and a COMMIT for a paused holder to keep), and the bounds an
  // attempt needs (lock wait, statement time) travel inside the statement's text, so the session
  // is never changed and never has to be put back. A connection handed out with autocommit off
  // gets the statement and a COMMIT (two round trips). The scheduler's multi-statement steps still
  // use inLeaseSession.

  /**
   * Runs one lease step on {@code c}: the statement in autocommit, or followed by a commit when the
   * connection was handed out with autocommit off. MySQL 8 (not MariaDB) has no per-statement
   * lock-wait bound and uses {@link #inLeaseSession}.
   */
  public <T> T inStep(Connection c, long timeoutMs, StepCall<T> call) throws SQLException {
    return LeaseSql.step(c, timeoutMs, call);
  }

  /**
   * Runs a statement that returns rows, {@code sql} being its text: a text written as {@code SET
   * STATEMENT ... FOR SELECT ...} (MariaDB's per-statement bounds) with {@code execute} and {@code
   * getResultSet}, since MySQL Connector/J refuses {@code executeQuery} on it; every other text
   * with {@code executeQuery} (sqlite-jdbc answers an {@code UPDATE ... RETURNING} only to that).
   * The one place that tells them apart: the lease steps, the batches and a group's statements all
   * read through it.
   */
  public static ResultSet executeRead(PreparedStatement ps, String sql) throws SQLException {
    if (sql.startsWith("SET STATEMENT")) {
      ps.execute();
      return ps.getResultSet();
    }
    return ps.executeQuery();
  }

  /**
   * The claim in one statement: claims {@code name} if it is expired by the database clock. Where
   * the statement can tell, it also says whether the row exists, so a missing row costs one more
   * statement ({@link #createRowStep}) only when it is missing.
   */
  public abstract ClaimResult claimStep(
      Connection c, String name, String holder, String instance, long leaseMs, long timeoutMs)
      throws SQLException;

  /** {@link #createRow} as a step; true if this statement created the row. */
  public abstract boolean createRowStep(Connection c, String name, long timeoutMs)
      throws SQLException;

  /** {@link #renew} as one bounded statement. */
  public abstract boolean renewStep(
      Connection c, String name, String holder, long term, long leaseMs, long timeoutMs)
      throws SQLException;

  /** {@link #release} as one bounded statement. */
  public abstract boolean releaseStep(
      Connection c, String name, String holder, long term, long timeoutMs) throws SQLException;

  /** The plain verify as one statement: a read that takes no lock, so it needs no bound. */
  public abstract boolean verifyStep(
      Connection c, String name, String holder, long term, long timeoutMs) throws SQLException;

  /**
   * Renews {@code leases} (at most {@link #MAX_RENEWALS_PER_STATEMENT}) in one statement, each only
   * for its holder at its term and only while the database has not let it expire, exactly like
   * {@link #renew}; returns the ones it renewed.
   */
  public abstract Set<Held> renewAll(Connection c, List<Held> leases, long leaseMs, long timeoutMs)
      throws SQLException;

  /**
   * Releases {@code leases} (at most {@link #MAX_RENEWALS_PER_STATEMENT}) in one statement, each
   * only for its holder at its term, exactly like {@link #releaseStep}: the batched release of a
   * group's drain and close and of a manager's close. Returns how many rows it released (fewer when
   * a lease was meanwhile taken over). {@code revision} changes in every matched row, so both MySQL
   * drivers count each match whether they count found or changed rows.
   */
  public abstract int releaseAll(Connection c, List<Held> leases, long timeoutMs)
      throws SQLException;

  // ---- transfer: hand a held lease to a named successor ----------------------------------------
  //
  // A transfer is a claim made by the holder for someone else: one statement that, only while the
  // caller still holds the lease (holder and term match, not expired), writes a new term, the
  // successor's instance and a pending holder, and an expiry of now + the adoption bound. It
  // changes the row exactly as a claim does, so on every database it waits for the transactions a
  // strict verify let in under term t, exactly as a claim does (PostgreSQL: FOR UPDATE, see
  // PostgresDialect), and the old holder's verifies, renewals and releases match nothing from then
  // on (its term is gone). The row is not expired while the transfer is pending, so no third
  // process can claim it; the successor adopts it in a statement of its own (adoptStep) that swaps
  // the pending holder for its freshly minted token at the same term. If it never does, the row
  // expires at the bound and is free as usual.

  /**
   * The holder value of a transferred lease not adopted yet. Minted holders are 32 hex digits, so
   * no lease of any process ever has this value: nothing verifies, renews or releases under it.
   */
  public static final String TRANSFER_PENDING = "~transfer-pending";

  /**
   * Transfers {@code name} from {@code holder} at {@code term} to {@code successor}: a new term
   * ({@link #nextTerm}), holder {@link #TRANSFER_PENDING}, instance {@code successor}, expiry
   * database clock + {@code adoptWithinMs}. The new term, or null if {@code holder} no longer held
   * it at {@code term}.
   */
  public abstract Long transferStep(
      Connection c,
      String name,
      String holder,
      long term,
      String successor,
      long adoptWithinMs,
      long timeoutMs)
      throws SQLException;

  /**
   * {@link #transferStep} for many leases of one holder process to one successor (a group moving
   * keys to the member that needs them): at most {@link #MAX_RENEWALS_PER_STATEMENT} leases, each
   * transferred only for its holder at its term while not expired, each to a new term of its own
   * ({@link #nextTerm}). Returns the new term of each lease transferred, by name (missing: no
   * longer held).
   */
  public abstract Map<String, Long> transferAll(
      Connection c, List<Held> leases, String successor, long adoptWithinMs, long timeoutMs)
      throws SQLException;

  /**
   * Adopts {@code name} if it was transferred to {@code instance} and the transfer has not expired:
   * the pending holder becomes {@code holder}, the expiry database clock + {@code leaseMs}; the
   * term stays the one the transfer wrote. It needs no lock beyond its own row lock: the transfer
   * already waited for term t's transactions, and nothing can have verified under the pending
   * holder. The term, or null if there is nothing to adopt.
   */
  public abstract Long adoptStep(
      Connection c, String name, String instance, String holder, long leaseMs, long timeoutMs)
      throws SQLException;

  // ---- outside the steps: the session-bound statements, the clock, the table ------------------

  /**
   * Renew: extends the lease only for its holder and only while the database has not yet let it
   * expire. {@code revision} is bumped so that a match always changes the row: the MySQL drivers
   * then report 1 whether they count found or changed rows.
   */
  public abstract boolean renew(Connection c, String name, String holder, long term, long leaseMs)
      throws SQLException;

  /** Release: the row expires at once, so anyone may claim it; only its holder can release it. */
  public abstract boolean release(Connection c, String name, String holder, long term)
      throws SQLException;

  /** The database clock, UTC epoch milliseconds. */
  public abstract long now(Connection c) throws SQLException;

  /**
   * Fails with a clear error when the lease table does not exist, or cannot be reached by {@link
   * #reference()} (on MySQL/MariaDB: a table of an earlier version, not partitioned: {@link
   * #upgrade}).
   */
  public abstract void checkTable(Connection c) throws SQLException;

  /** Fails when the table named as configured lacks the lease table's columns (or is missing). */
  public abstract void checkColumns(Connection c) throws SQLException;

  /**
   * What the lease row of {@code name} says now, read with the database clock in one statement;
   * null if there is no row.
   */
  public abstract RowState describe(Connection c, String name) throws SQLException;

  /** The lease row of one name as {@link #describe} read it. */
  public record RowState(String instance, long term, long expiresAtMs, long databaseNowMs) {}

  /**
   * Fails if this session may not write the lease table: an UPDATE that matches no row, which the
   * servers still check the UPDATE privilege for (SQLite has no privileges).
   */
  public abstract void checkWritable(Connection c) throws SQLException;

  // ---- detection ------------------------------------------------------------------------------

  public static final String SUPPORTED = "PostgreSQL, MySQL, MariaDB or SQLite 3.42 or later";

  /**
   * Chooses the dialect from the connection's metadata ({@link DialectDetection}).
   *
   * @param table a validated table identifier
   * @param clockFunction a SQL function name to read the clock from instead of the server clock
   *     (tests with a controlled database clock), or null
   * @param rules {@link SqlRules#PRODUCTION}, or the weakened rules of a negative control
   * @throws dev.lease.core.LeaseException if the database is not supported
   */
  public static Dialect detect(Connection c, String table, String clockFunction, SqlRules rules)
      throws SQLException {
    return DialectDetection.detect(c, table, clockFunction, rules);
  }

  /** PostgreSQL's dialect for a validated table identifier (for the DDL). */
  public static Dialect postgresql(String table) {
    return new PostgresDialect(table, null, SqlRules.PRODUCTION);
  }

  /** MySQL's dialect for a validated table identifier (for the DDL). */
  public static Dialect mysql(String table) {
    return new MySqlDialect(table, null, false, SqlRules.PRODUCTION);
  }

  /** MariaDB's dialect for a validated table identifier (for the DDL). */
  public static Dialect mariadb(String table) {
    return new MySqlDialect(table, null, true, SqlRules.PRODUCTION);
  }

  /** SQLite's dialect for a validated table identifier (for the DDL). */
  public static Dialect sqlite(String table) {
    return new SqliteDialect(table, null, SqlRules.PRODUCTION);
  }

  // ---- scheduler slots (LeaseScheduler) -------------------------------------------------------
  //
  // A job's name is a lease claimed per instant of its schedule. Three nullable columns of the row:
  //   slot_ms             the last instant on record: the last one claimed, or the last one a
  //                       finished round overran (taken along by finish so nobody runs it late);
  //   unfinished_slot_ms  the instant claimed and not finished yet: set by a claim, cleared by
  //                       finish; still set after the holder died or lost the lease, which is what
  //                       a rerun finds;
  //   rerun_slot_ms       the unfinished instant that was claimed again, so it is claimed again
  //                       once.
  // Every instant is compared with the database clock inside the statement, never with the
  // process's.

  /**
   * A claimed instant: the new term, what the claim replaced (to report a superseded instant), and
   * whether the previous term was another instance's (as {@link ClaimResult#fromAnother}).
   */
  public record SlotClaimed(
      long term, Long previousSlotMs, Long previousUnfinishedMs, boolean fromAnother) {}

  /** The slot columns of one job, and whether its lease is free by the database clock. */
  public record SlotState(Long lastMs, Long unfinishedMs, Long rerunMs, boolean free) {}

  /** The slot columns of many jobs, read in one statement together with the database clock. */
  public record SlotStates(long databaseNowMs, Map<String, SlotState> byName) {}

  /** How many names {@link #slotStates} takes in one statement. */
  public static final int MAX_NAMES_PER_STATEMENT = 500;

  /**
   * Claims instant {@code instantMs} of job {@code name}: only if the name is free, the instant is
   * later than the last on record and the database clock has reached it. Records it as the last
   * claimed and as unfinished; a new term ({@link #nextTerm}). Null if not claimed. What the claim
   * replaced is reported exactly (see {@code PostgresDialect} and {@code StandardDialect} for how).
   *
   * @param requireLater false only for the negative control of the tests (a broken scheduler that
   *     ignores the last instant on record)
   */
  public abstract SlotClaimed claimSlot(
      Connection c,
      String name,
      String holder,
      String instance,
      long leaseMs,
      long instantMs,
      boolean requireLater)
      throws SQLException;

  /**
   * Claims the unfinished instant {@code instantMs} of job {@code name} again, once: only if the
   * name is free, the instant is still the unfinished one, and it was not claimed again before. A
   * new term ({@link #nextTerm}); null if not claimed.
   *
   * @param once false only for the negative control of the tests (reruns without limit)
   */
  public abstract Long claimSlotAgain(
      Connection c,
      String name,
      String holder,
      String instance,
      long leaseMs,
      long instantMs,
      boolean once)
      throws SQLException;

  /**
   * Finish: the round of {@code instantMs} ran to its end. Clears the unfinished instant, gives the
   * name back (expires at once) and takes along {@code overrunMs}, the last instant the round
   * overran, as the last on record, but only if the database clock has reached it. Only the holder
   * of the claim at its term can finish, and only its own instant. {@code revision} is bumped so
   * that a match always changes the row (MySQL drivers then report 1 whether they count found or
   * changed rows).
   */
  public abstract boolean finishSlot(
      Connection c, String name, String holder, long term, long instantMs, long overrunMs)
      throws SQLException;

  /** The last instant on record for job {@code name}; null if it never ran (or has no row). */
  public abstract Long lastSlot(Connection c, String name) throws SQLException;

  /**
   * The slot columns of {@code names} (at most {@link #MAX_NAMES_PER_STATEMENT}) and the database
   * clock, in one statement: a scheduler polls all its jobs with it, finding their unfinished
   * instants at once. The IN list holds only placeholders.
   */
  public abstract SlotStates slotStates(Connection c, List<String> names) throws SQLException;
}
