package dev.lease.core.dialect;

import dev.lease.core.Database;
import dev.lease.core.LeaseException;
import dev.lease.core.internal.TestFault;
import java.math.BigInteger;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The SQL of the lease protocol for one database, readable as text, with the reason for each
 * non-obvious choice beside it. Every statement reads {@code :now} from the database server's clock
 * inside the statement ({@link #clock()}); no user value is ever concatenated into SQL (the table
 * name is a validated identifier, checked before a dialect is made).
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
   * What one claim statement found: the new term when it claimed, else null; and whether the row
   * exists (null when the statement cannot tell: MySQL and MariaDB, whose UPDATE returns only a
   * count).
   */
  public record ClaimResult(Long term, Boolean rowExists) {}

  /** One held lease of a batched renewal ({@link #renewAll}). */
  public record Held(String name, String holder, long term) {}

  /** How many leases one batched renewal statement takes ({@link #renewAll}). */
  public static final int MAX_RENEWALS_PER_STATEMENT = 1000;

  /** A step that puts a session setting back after an attempt. */
  @FunctionalInterface
  interface Restore {
    void run() throws SQLException;
  }

  final String table;

  /** SQL expression: the database server's clock, UTC epoch milliseconds, as a bigint. */
  final String clock;

  /** Negative controls of the tests only; empty in production. */
  final Set<TestFault> faults;

  Dialect(String table, String clock, Set<TestFault> faults) {
    this.table = table;
    this.clock = clock;
    this.faults = faults.isEmpty() ? Set.of() : EnumSet.copyOf(faults);
  }

  /** The lease table, as written into the statements. */
  public final String table() {
    return table;
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
   * Creates the row of {@code name} once, expired, at the term {@link #startTerm()}; does nothing
   * if it exists (its term stays what it is).
   */
  public void createRow(Connection c, String name) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(createRowSql())) {
      ps.setString(1, name);
      ps.executeUpdate();
    }
  }

  /**
   * The SQL expression of the term a new row starts at: the database clock in milliseconds × 1000,
   * so terms never repeat for a name even when its row is deleted (by hand, a TRUNCATE, a dropped
   * and recreated table). An earlier row of the same name was created at some earlier clock value
   * t0 and ended at most at 1000 × t0 + n after n hand-overs; the new row starts at 1000 × t1,
   * above that whenever t1 − t0 > n / 1000 ms, that is unless the old row saw more than 1000
   * hand-overs per millisecond of its life (each is a committed claim transaction; none of the
   * supported databases comes near) or the database clock was stepped back to within that margin of
   * t0. Stateless: nothing to keep, nothing to lose with the table. The values stay far inside a
   * bigint (about 1.8e15 in 2026; the limit is near the year 292,000).
   */
  final String startTerm() {
    if (faults.contains(TestFault.TERM_FROM_ZERO)) {
      return "0";
    }
    return "(" + stepClock() + ") * 1000";
  }

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
    int i = first;
    for (Object v : verifyParameters(name, holder, term, strict, idleInTransactionMs)) {
      if (v instanceof Long l) {
        ps.setLong(i++, l);
      } else {
        ps.setString(i++, (String) v);
      }
    }
    return i;
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
    if (c.getAutoCommit()) {
      return call.call(c, timeoutMs);
    }
    try {
      T result = call.call(c, timeoutMs);
      c.commit();
      return result;
    } catch (SQLException | RuntimeException | Error e) {
      rollbackQuietly(c, e);
      throw e;
    }
  }

  /**
   * Text put before a step's statement that bounds it on the server (MariaDB's {@code SET STATEMENT
   * ... FOR}); empty where the bound is inside the statement or set by the session.
   */
  String stepPrefix(long timeoutMs) {
    return "";
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
  public boolean createRowStep(Connection c, String name, long timeoutMs) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(stepPrefix(timeoutMs) + createRowSql())) {
      ps.setString(1, name);
      return ps.executeUpdate() == 1;
    }
  }

  /** The create statement of {@link #createRow}; its one parameter is the name. */
  abstract String createRowSql();

  /**
   * The clock expression of the one-statement steps; the same as {@link #clock()} except on
   * MariaDB, whose steps cannot reset a frozen session clock ({@code SET timestamp}) first.
   */
  String stepClock() {
    return clock;
  }

  /** {@link #renew} as one bounded statement. */
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
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setLong(1, leaseMs);
      ps.setString(2, name);
      ps.setString(3, holder);
      ps.setLong(4, term);
      return ps.executeUpdate() == 1;
    }
  }

  /** {@link #release} as one bounded statement. */
  public boolean releaseStep(Connection c, String name, String holder, long term, long timeoutMs)
      throws SQLException {
    String sql =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + table
            + " SET expires_at_ms = 0, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND term = ?";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, name);
      ps.setString(2, holder);
      ps.setLong(3, term);
      return ps.executeUpdate() == 1;
    }
  }

  /** The plain verify as one statement: a read that takes no lock, so it needs no bound. */
  public boolean verifyStep(Connection c, String name, String holder, long term, long timeoutMs)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            stepPrefix(timeoutMs)
                + "SELECT term FROM "
                + table
                + " WHERE name = ? AND holder = ? AND term = ? AND expires_at_ms > "
                + stepClock())) {
      ps.setString(1, name);
      ps.setString(2, holder);
      ps.setLong(3, term);
      // execute, not executeQuery: MySQL Connector/J refuses executeQuery on SET STATEMENT ... FOR
      ps.execute();
      try (ResultSet rs = ps.getResultSet()) {
        return rs != null && rs.next();
      }
    }
  }

  /**
   * Renews {@code leases} (at most {@link #MAX_RENEWALS_PER_STATEMENT}) in one statement, each only
   * for its holder at its term and only while the database has not let it expire, exactly like
   * {@link #renew}; returns the ones it renewed. This implementation (MySQL, MariaDB: no {@code
   * UPDATE ... RETURNING}) counts the rows; only when fewer than all were renewed does a second
   * statement read which ones are still ours and unexpired, which after the UPDATE are exactly the
   * ones it renewed (it set their expiry into the future; a row it skipped was expired or someone
   * else's, and stays so).
   */
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
    int updated;
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setLong(1, leaseMs);
      bindHeld(ps, 2, leases);
      updated = ps.executeUpdate();
    }
    if (updated == leases.size()) {
      return Set.copyOf(leases);
    }
    Set<Held> renewed = new HashSet<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT name, holder, term FROM "
                + tableByPrimaryKey()
                + " WHERE "
                + match
                + " AND expires_at_ms > "
                + stepClock())) {
      bindHeld(ps, 1, leases);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          renewed.add(new Held(rs.getString(1), rs.getString(2), rs.getLong(3)));
        }
      }
    }
    return renewed;
  }

  /**
   * Releases {@code leases} (at most {@link #MAX_RENEWALS_PER_STATEMENT}) in one statement, each
   * only for its holder at its term, exactly like {@link #releaseStep}: the batched release of a
   * group's drain and close and of a manager's close. Returns how many rows it released (fewer when
   * a lease was meanwhile taken over). {@code revision} changes in every matched row, so both MySQL
   * drivers count each match whether they count found or changed rows. This implementation serves
   * MySQL, MariaDB (the step's bounds in front) and SQLite (its own {@link #heldMatch}).
   */
  public int releaseAll(Connection c, List<Held> leases, long timeoutMs) throws SQLException {
    checkBatch(leases);
    String sql =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + tableByPrimaryKey()
            + " SET expires_at_ms = 0, revision = revision + 1 WHERE "
            + heldMatch(leases.size());
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      bindHeld(ps, 1, leases);
      return ps.executeUpdate();
    }
  }

  static void checkBatch(List<Held> leases) {
    if (leases.isEmpty() || leases.size() > MAX_RENEWALS_PER_STATEMENT) {
      throw new IllegalArgumentException(
          "a batch takes 1 to " + MAX_RENEWALS_PER_STATEMENT + " leases, got " + leases.size());
    }
  }

  /**
   * The WHERE of a batch: the name list first, so the primary key finds the rows (only they are
   * read and locked), then the exact (name, holder, term) of each.
   */
  String heldMatch(int n) {
    return "name IN ("
        + "?, ".repeat(n - 1)
        + "?) AND (name, holder, term) IN ("
        + "(?, ?, ?), ".repeat(n - 1)
        + "(?, ?, ?))";
  }

  /** Binds {@link #heldMatch}'s parameters from {@code first}; returns the next free index. */
  static int bindHeld(PreparedStatement ps, int first, List<Held> leases) throws SQLException {
    int i = first;
    for (Held h : leases) {
      ps.setString(i++, h.name());
    }
    for (Held h : leases) {
      ps.setString(i++, h.name());
      ps.setString(i++, h.holder());
      ps.setLong(i++, h.term());
    }
    return i;
  }

  // ---- transfer: hand a held lease to a named successor ----------------------------------------
  //
  // A transfer is a claim made by the holder for someone else: one statement that, only while the
  // caller still holds the lease (holder and term match, not expired), writes the new term t+1, the
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
   * Transfers {@code name} from {@code holder} at {@code term} to {@code successor}: term + 1,
   * holder {@link #TRANSFER_PENDING}, instance {@code successor}, expiry database clock + {@code
   * adoptWithinMs}. The new term, or null if {@code holder} no longer held it at {@code term}. This
   * implementation (SQLite): one UPDATE ... RETURNING; SQLite's single writer orders it after every
   * transaction whose strict verify (a write) came first.
   */
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
            + " SET holder = ?, instance = ?, term = term + 1, expires_at_ms = "
            + stepClock()
            + " + ?, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND term = ? AND expires_at_ms > "
            + stepClock()
            + " RETURNING term";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, TRANSFER_PENDING);
      ps.setString(2, successor);
      ps.setLong(3, adoptWithinMs);
      ps.setString(4, name);
      ps.setString(5, holder);
      ps.setLong(6, term);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : null;
      }
    }
  }

  /**
   * {@link #transferStep} for many leases of one holder process to one successor (a group moving
   * keys to the member that needs them): at most {@link #MAX_RENEWALS_PER_STATEMENT} leases, each
   * transferred only for its holder at its term while not expired, each to its own term + 1.
   * Returns the new term of each lease transferred, by name (missing: no longer held). This
   * implementation (SQLite): one UPDATE ... RETURNING, ordered by the single writer after every
   * transaction whose strict verify came first, as {@link #transferStep}.
   */
  public Map<String, Long> transferAll(
      Connection c, List<Held> leases, String successor, long adoptWithinMs, long timeoutMs)
      throws SQLException {
    checkBatch(leases);
    String sql =
        stepPrefix(timeoutMs)
            + "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = term + 1, expires_at_ms = "
            + stepClock()
            + " + ?, revision = revision + 1 WHERE "
            + heldMatch(leases.size())
            + " AND expires_at_ms > "
            + stepClock()
            + " RETURNING name, term";
    Map<String, Long> terms = new HashMap<>();
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, TRANSFER_PENDING);
      ps.setString(2, successor);
      ps.setLong(3, adoptWithinMs);
      bindHeld(ps, 4, leases);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          terms.put(rs.getString(1), rs.getLong(2));
        }
      }
    }
    return terms;
  }

  /**
   * Adopts {@code name} if it was transferred to {@code instance} and the transfer has not expired:
   * the pending holder becomes {@code holder}, the expiry database clock + {@code leaseMs}; the
   * term stays the one the transfer wrote. It needs no lock beyond its own row lock: the transfer
   * already waited for term t's transactions, and nothing can have verified under the pending
   * holder. The term, or null if there is nothing to adopt. This implementation (SQLite): UPDATE
   * ... RETURNING.
   */
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
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, holder);
      ps.setLong(2, leaseMs);
      ps.setString(3, name);
      ps.setString(4, TRANSFER_PENDING);
      ps.setString(5, instance);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : null;
      }
    }
  }

  // ---- statements every dialect writes the same way -------------------------------------------

  /**
   * Renew: extends the lease only for its holder and only while the database has not yet let it
   * expire. {@code revision} is bumped so that a match always changes the row: the MySQL drivers
   * then report 1 whether they count found or changed rows.
   */
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
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setLong(1, leaseMs);
      ps.setString(2, name);
      ps.setString(3, holder);
      ps.setLong(4, term);
      return ps.executeUpdate() == 1;
    }
  }

  /** Release: the row expires at once, so anyone may claim it; only its holder can release it. */
  public boolean release(Connection c, String name, String holder, long term) throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET expires_at_ms = 0, revision = revision + 1"
            + " WHERE name = ? AND holder = ? AND term = ?";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, name);
      ps.setString(2, holder);
      ps.setLong(3, term);
      return ps.executeUpdate() == 1;
    }
  }

  /** The database clock, UTC epoch milliseconds. */
  public long now(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT " + clock)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Fails with a clear error when the lease table does not exist. */
  public void checkTable(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT name, holder, instance, term, expires_at_ms, revision"
                    + " FROM "
                    + table
                    + " WHERE 1 = 0")) {
      rs.next();
    }
  }

  /**
   * What the lease row of {@code name} says now, read with the database clock in one statement;
   * null if there is no row.
   */
  public RowState describe(Connection c, String name) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT instance, term, expires_at_ms, "
                + clock
                + " FROM "
                + table
                + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        return new RowState(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
      }
    }
  }

  /** The lease row of one name as {@link #describe} read it. */
  public record RowState(String instance, long term, long expiresAtMs, long databaseNowMs) {}

  /**
   * Fails if this session may not write the lease table: an UPDATE that matches no row, which the
   * servers still check the UPDATE privilege for (SQLite has no privileges).
   */
  public void checkWritable(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.executeUpdate("UPDATE " + table + " SET revision = revision WHERE 1 = 0");
    }
  }

  /** Rolls back after {@code cause}, keeping a rollback failure as suppressed on it. */
  static void rollbackQuietly(Connection c, Throwable cause) {
    try {
      c.rollback();
    } catch (SQLException r) {
      cause.addSuppressed(r);
    }
  }

  /**
   * Puts a session back after an attempt, each step even if the one before failed. A step that
   * fails never hides the attempt's own error {@code failure} (it is added to it as suppressed):
   * when the connection broke, every restore fails too, and the caller must see why the attempt
   * failed, not that the connection was closed afterwards. With no {@code failure}, the first
   * failed step is thrown (the others suppressed on it); a broken connection is discarded by its
   * pool anyway.
   */
  final void restore(Throwable failure, Restore... steps) throws SQLException {
    SQLException first = null;
    for (Restore step : steps) {
      try {
        step.run();
      } catch (SQLException e) {
        if (faults.contains(TestFault.RESTORE_HIDES_ERROR)) {
          throw e; // the bug: a finally that throws replaces the attempt's own error
        }
        if (failure != null) {
          failure.addSuppressed(e);
        } else if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  // ---- detection ------------------------------------------------------------------------------

  public static final String SUPPORTED = "PostgreSQL, MySQL, MariaDB or SQLite 3.42 or later";

  /**
   * Chooses the dialect from the connection's metadata, never from the URL: MySQL Connector/J
   * connected to MariaDB reports product "MySQL" and a version such as "5.5.5-10.11.19-MariaDB".
   *
   * @param table a validated table identifier
   * @param clockFunction a SQL function name to read the clock from instead of the server clock
   *     (tests with a controlled database clock), or null
   * @param faults negative controls of the tests; empty in production
   * @throws LeaseException if the database is not supported
   */
  public static Dialect detect(
      Connection c, String table, String clockFunction, Set<TestFault> faults) throws SQLException {
    DatabaseMetaData md = c.getMetaData();
    String product = md.getDatabaseProductName();
    String version = md.getDatabaseProductVersion();
    String p = product == null ? "" : product.toLowerCase(Locale.ROOT);
    String v = version == null ? "" : version.toLowerCase(Locale.ROOT);
    String fn = clockFunction == null ? null : clockFunction + "()";
    if (p.contains("postgresql")) {
      return new PostgresDialect(table, fn, faults);
    }
    if (p.contains("mariadb") || (p.contains("mysql") && v.contains("mariadb"))) {
      MultiWriterCheck.refuseMultiWriter(c, "MariaDB");
      return new MySqlDialect(table, fn, true, faults);
    }
    if (p.contains("mysql")) {
      MultiWriterCheck.refuseMultiWriter(c, "MySQL");
      return new MySqlDialect(table, fn, false, faults);
    }
    if (p.contains("sqlite")) {
      SqliteDialect.checkVersion(c);
      return new SqliteDialect(table, fn, faults);
    }
    throw new LeaseException(
        "database "
            + product
            + " "
            + version
            + " is not supported; the"
            + " lease table must live in "
            + SUPPORTED);
  }

  /** The dialect of {@code database} for a validated table identifier (for the DDL). */
  public static Dialect of(Database database, String table) {
    return switch (database) {
      case POSTGRESQL -> new PostgresDialect(table, null, Set.of());
      case MYSQL -> new MySqlDialect(table, null, false, Set.of());
      case MARIADB -> new MySqlDialect(table, null, true, Set.of());
      case SQLITE -> new SqliteDialect(table, null, Set.of());
    };
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
   * A claimed instant: the new term, and what the claim replaced (to report a superseded instant).
   */
  public record SlotClaimed(long term, Long previousSlotMs, Long previousUnfinishedMs) {}

  /** The slot columns of one job, and whether its lease is free by the database clock. */
  public record SlotState(Long lastMs, Long unfinishedMs, Long rerunMs, boolean free) {}

  /** The slot columns of many jobs, read in one statement together with the database clock. */
  public record SlotStates(long databaseNowMs, Map<String, SlotState> byName) {}

  /** How many names {@link #slotStates} takes in one statement. */
  public static final int MAX_NAMES_PER_STATEMENT = 500;

  /**
   * The null-safe equality operator of this database ({@code a <op> b} is true when both are null
   * or both equal): MySQL's {@code <=>}, SQLite's {@code IS}. Used by the compare-and-set slot
   * claim of {@link #claimSlot}; PostgreSQL claims differently and never asks.
   */
  String nullSafeEquals() {
    throw new UnsupportedOperationException(product() + " claims slots in one statement");
  }

  /**
   * Claims instant {@code instantMs} of job {@code name}: only if the name is free, the instant is
   * later than the last on record and the database clock has reached it. Records it as the last
   * claimed and as unfinished; term + 1. Null if not claimed.
   *
   * <p>This implementation (MySQL, MariaDB, SQLite) is a compare-and-set: neither MySQL's UPDATE
   * (no RETURNING) nor SQLite's RETURNING (only the new row) can report what a claim replaced, and
   * on InnoDB a locking read first would queue every polling replica behind the holder's
   * strict-verified transactions. So: a plain read of the row, then an UPDATE that claims only if
   * the row still is exactly what was read (term, last and unfinished instant, compared null-safe
   * with {@link #nullSafeEquals}); what the claim reports as superseded is then exactly what it
   * replaced, and the new term is the read term + 1. The UPDATE itself checks that the name is
   * free, the instant later than the last on record and reached by the database clock. InnoDB in
   * READ COMMITTED evaluates that against the newest committed row before it locks, like {@link
   * #claim}; SQLite's single writer serialises the UPDATE with every other write. The UPDATE
   * changes {@code term}, so 1 means claimed whatever rows a MySQL driver counts.
   *
   * @param requireLater false only for the negative control of the tests (a broken scheduler that
   *     ignores the last instant on record)
   */
  public SlotClaimed claimSlot(
      Connection c,
      String name,
      String holder,
      String instance,
      long leaseMs,
      long instantMs,
      boolean requireLater)
      throws SQLException {
    long term;
    Long slot;
    Long unfinished;
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT term, slot_ms, unfinished_slot_ms FROM " + table + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        term = rs.getLong(1);
        slot = nullableLong(rs, 2);
        unfinished = nullableLong(rs, 3);
      }
    }
    String eq = nullSafeEquals();
    String update =
        "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = term + 1,"
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
    try (PreparedStatement ps = c.prepareStatement(update)) {
      int i = 1;
      ps.setString(i++, holder);
      ps.setString(i++, instance);
      ps.setLong(i++, leaseMs);
      ps.setLong(i++, instantMs);
      ps.setLong(i++, instantMs);
      ps.setString(i++, name);
      ps.setLong(i++, term);
      setNullableLong(ps, i++, slot);
      setNullableLong(ps, i++, unfinished);
      if (requireLater) {
        ps.setLong(i++, instantMs);
      }
      ps.setLong(i, instantMs);
      if (ps.executeUpdate() != 1) {
        return null;
      }
    }
    return new SlotClaimed(term + 1, slot, unfinished);
  }

  /**
   * Claims the unfinished instant {@code instantMs} of job {@code name} again, once: only if the
   * name is free, the instant is still the unfinished one, and it was not claimed again before.
   * Term + 1. The new term, or null if not claimed.
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
   * changed rows). The same text on every database.
   */
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
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setLong(1, overrunMs);
      ps.setLong(2, overrunMs);
      ps.setLong(3, overrunMs);
      ps.setString(4, name);
      ps.setString(5, holder);
      ps.setLong(6, term);
      ps.setLong(7, instantMs);
      return ps.executeUpdate() == 1;
    }
  }

  /** The last instant on record for job {@code name}; null if it never ran (or has no row). */
  public Long lastSlot(Connection c, String name) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT slot_ms FROM " + table + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? nullableLong(rs, 1) : null;
      }
    }
  }

  /**
   * The slot columns of {@code names} (at most {@link #MAX_NAMES_PER_STATEMENT}) and the database
   * clock, in one statement: a scheduler polls all its jobs with it, finding their unfinished
   * instants at once. The IN list holds only placeholders.
   */
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
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < names.size(); i++) {
        ps.setString(i + 1, names.get(i));
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          states.put(
              rs.getString(1),
              new SlotState(
                  nullableLong(rs, 2),
                  nullableLong(rs, 3),
                  nullableLong(rs, 4),
                  rs.getInt(5) == 1));
          databaseNow = rs.getLong(6);
        }
      }
    }
    return new SlotStates(databaseNow != null ? databaseNow : now(c), states);
  }

  static Long nullableLong(ResultSet rs, int column) throws SQLException {
    long v = rs.getLong(column);
    return rs.wasNull() ? null : v;
  }

  static void setNullableLong(PreparedStatement ps, int index, Long value) throws SQLException {
    if (value == null) {
      ps.setNull(index, Types.BIGINT);
    } else {
      ps.setLong(index, value);
    }
  }
}
