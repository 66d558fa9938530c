package dev.lease.core.dialect;

import dev.lease.core.LeaseException;
import dev.lease.core.dialect.LeaseSql.HeldRows;
import dev.lease.core.internal.SqlRules;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** SQLite 3.42 or later (sqlite-jdbc 3.42+ bundles it). */
final class SqliteDialect extends StandardDialect {

  /**
   * 'now' is fixed within one statement step, so every use in a statement agrees. The 'subsec'
   * modifier exists since SQLite 3.42; older versions return NULL silently, hence {@link
   * #checkVersion}.
   */
  private static final String CLOCK = "CAST(unixepoch('now', 'subsec') * 1000 AS INTEGER)";

  SqliteDialect(String table, String clockFunction, SqlRules rules) {
    super(
        table,
        clockFunction != null ? clockFunction : CLOCK,
        "(" + (clockFunction != null ? clockFunction : CLOCK) + " * 1000)",
        rules);
  }

  /**
   * {@code main.<table>} (or the configured {@code schema.table}): SQLite resolves an unqualified
   * name to a {@code temp} table of that name first, so a session's {@code CREATE TEMP TABLE
   * leases} would stand in for the lease table; {@code main} names the database file itself and
   * cannot be attached over. A lease table in {@code temp} is refused: it would be this
   * connection's own.
   */
  @Override
  public void resolve(Connection c) throws SQLException {
    int dot = name.indexOf('.');
    if (dot >= 0 && name.substring(0, dot).equalsIgnoreCase("temp")) {
      throw new SQLException(
          "the lease table "
              + name
              + " is in SQLite's temp schema, which every connection has its own of; put it in"
              + " main (the database file) or an attached database");
    }
    table = dot >= 0 ? name : "main." + name;
  }

  /** SQLite's scalar {@code max} of two values. */
  @Override
  String greatest() {
    return "MAX";
  }

  static void checkVersion(Connection c) throws SQLException {
    String version = LeaseSql.firstPlain(c, "SELECT sqlite_version()", rs -> rs.getString(1));
    String[] parts = version.split("\\.");
    int major = Integer.parseInt(parts[0]);
    int minor = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
    if (major < 3 || (major == 3 && minor < 42)) {
      throw new LeaseException(
          "SQLite "
              + version
              + " is too old: the lease clock needs"
              + " unixepoch('now','subsec'), SQLite 3.42 or later; use sqlite-jdbc 3.42.0.0 or newer");
    }
  }

  @Override
  public String product() {
    return "SQLite";
  }

  @Override
  public List<String> ddl() {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + name
            + " ("
            + "name TEXT NOT NULL PRIMARY KEY, "
            + "holder TEXT NOT NULL DEFAULT '', "
            + "instance TEXT NOT NULL DEFAULT '', "
            + "term INTEGER NOT NULL DEFAULT 0, "
            + "expires_at_ms INTEGER NOT NULL DEFAULT 0, "
            + "revision INTEGER NOT NULL DEFAULT 0, "
            + "slot_ms INTEGER, "
            + "unfinished_slot_ms INTEGER, "
            + "rerun_slot_ms INTEGER)");
  }

  @Override
  public boolean isMissingTable(SQLException e) {
    String m = e.getMessage();
    return m != null && m.contains("no such table");
  }

  /**
   * Each lease statement is a single autocommit statement; the busy timeout bounds how long it
   * waits for another connection's write lock (a strict holder's transaction, another process's
   * claim). The connection's own busy timeout is put back afterwards: the connection may be a
   * pooled one the application also uses (PooledSessionTest).
   */
  @Override
  public <T> T inLeaseSession(Connection c, long timeoutMs, SqlCall<T> call) throws SQLException {
    Long busy = LeaseSql.firstPlain(c, "PRAGMA busy_timeout", rs -> rs.getLong(1));
    long savedBusyTimeout = busy != null ? busy : 0;
    LeaseSql.executePlain(c, "PRAGMA busy_timeout = " + timeoutMs);
    boolean autoCommit = c.getAutoCommit();
    Throwable failure = null;
    try {
      if (!autoCommit) {
        c.setAutoCommit(true);
      }
      return call.call(c);
    } catch (SQLException | RuntimeException | Error e) {
      failure = e;
      throw e;
    } finally {
      LeaseSql.restore(
          rules,
          failure,
          () -> {
            if (!autoCommit) {
              c.setAutoCommit(false);
            }
          },
          () -> LeaseSql.executePlain(c, "PRAGMA busy_timeout = " + savedBusyTimeout));
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
   * A step is one statement in autocommit, bounded by the busy timeout, set and put back through
   * sqlite-jdbc's own API ({@code SQLiteConnection.getBusyTimeout/setBusyTimeout}: a call into the
   * library, not a statement). sqlite-jdbc reports the busy timeout it was configured with (URL
   * {@code busy_timeout}, {@code SQLiteConfig}, {@code setBusyTimeout}); a {@code PRAGMA
   * busy_timeout} an application ran itself is not seen there and is replaced by that value. A
   * connection of another SQLite driver gets the PRAGMAs.
   */
  @Override
  public <T> T inStep(Connection c, long timeoutMs, StepCall<T> call) throws SQLException {
    Connection raw = sqliteJdbc(c);
    if (raw == null) {
      return inLeaseSession(c, timeoutMs, conn -> call.call(conn, timeoutMs));
    }
    int saved;
    try {
      saved = (int) GET_BUSY_TIMEOUT.invoke(raw);
      SET_BUSY_TIMEOUT.invoke(raw, (int) Math.min(Integer.MAX_VALUE, Math.max(1, timeoutMs)));
    } catch (SQLException | RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new SQLException(t);
    }
    Throwable failure = null;
    try {
      return super.inStep(c, timeoutMs, call);
    } catch (SQLException | RuntimeException | Error e) {
      failure = e;
      throw e;
    } finally {
      LeaseSql.restore(
          rules,
          failure,
          () -> {
            try {
              SET_BUSY_TIMEOUT.invoke(raw, saved);
            } catch (SQLException | RuntimeException | Error e) {
              throw e;
            } catch (Throwable t) {
              throw new SQLException(t);
            }
          });
    }
  }

  private static final Class<?> SQLITE_CONNECTION;
  private static final MethodHandle GET_BUSY_TIMEOUT;
  private static final MethodHandle SET_BUSY_TIMEOUT;

  static {
    Class<?> type = null;
    MethodHandle get = null;
    MethodHandle set = null;
    try {
      type = Class.forName("org.sqlite.SQLiteConnection");
      MethodHandles.Lookup lookup = MethodHandles.publicLookup();
      get = lookup.findVirtual(type, "getBusyTimeout", MethodType.methodType(int.class));
      set =
          lookup.findVirtual(type, "setBusyTimeout", MethodType.methodType(void.class, int.class));
    } catch (ReflectiveOperationException | LinkageError e) {
      type = null; // another SQLite driver: the PRAGMAs of inLeaseSession
    }
    SQLITE_CONNECTION = type;
    GET_BUSY_TIMEOUT = get;
    SET_BUSY_TIMEOUT = set;
  }

  /** The sqlite-jdbc connection behind {@code c} (a pool's proxy), or null. */
  private static Connection sqliteJdbc(Connection c) throws SQLException {
    if (SQLITE_CONNECTION == null) {
      return null;
    }
    if (SQLITE_CONNECTION.isInstance(c)) {
      return c;
    }
    if (c.isWrapperFor(SQLITE_CONNECTION)) {
      return (Connection) c.unwrap(SQLITE_CONNECTION);
    }
    return null;
  }

  /**
   * Create and claim in one statement: an upsert that inserts a missing row already claimed (at
   * {@link #startTerm()} + 1, the term the create-then-claim of the servers reaches) or claims the
   * existing row if it is expired; RETURNING gives the term only when it claimed. SQLite's single
   * writer serialises it with every other write, strict verifies included.
   */
  @Override
  public ClaimResult claimStep(
      Connection c, String name, String holder, String instance, long leaseMs, long timeoutMs)
      throws SQLException {
    String sql =
        "INSERT INTO "
            + table
            + " (name, holder, instance, term, expires_at_ms, revision) VALUES (?, ?, ?, "
            + startTerm()
            + " + 1, "
            + clock
            + " + ?, 1)"
            + " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
            + " instance = excluded.instance, term = "
            + nextTerm("term")
            + ","
            + " expires_at_ms = excluded.expires_at_ms,"
            // grows, and its lowest bit says whether the previous term was another instance's
            // (SET expressions read the row as it was; a new row starts at 1: another's)
            + " revision = (revision / 2 + 1) * 2 + (instance <> excluded.instance)"
            + " WHERE expires_at_ms <= "
            + clock
            + " RETURNING term, revision % 2";
    ClaimResult claimed =
        LeaseSql.first(
            c,
            sql,
            rs -> new ClaimResult(rs.getLong(1), true, rs.getLong(2) != 0),
            name,
            holder,
            instance,
            leaseMs);
    return claimed != null ? claimed : new ClaimResult(null, true);
  }

  /** SQLite takes row values only from a subquery: {@code IN (VALUES ...)}. */
  @Override
  String heldMatch(int n) {
    return "name IN ("
        + "?, ".repeat(n - 1)
        + "?) AND (name, holder, term) IN (VALUES "
        + "(?, ?, ?), ".repeat(n - 1)
        + "(?, ?, ?))";
  }

  /** One UPDATE ... RETURNING of the whole batch. */
  @Override
  public Set<Held> renewAll(Connection c, List<Held> leases, long leaseMs, long timeoutMs)
      throws SQLException {
    checkBatch(leases);
    String sql =
        "UPDATE "
            + table
            + " SET expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1 WHERE "
            + heldMatch(leases.size())
            + " AND expires_at_ms > "
            + clock
            + " RETURNING name, holder, term";
    return new HashSet<>(LeaseSql.query(c, sql, LeaseSql::held, leaseMs, new HeldRows(leases)));
  }

  /** One UPDATE ... RETURNING, run with executeQuery (sqlite-jdbc refuses executeUpdate on it). */
  @Override
  public Claimed claim(Connection c, String name, String holder, String instance, long leaseMs)
      throws SQLException {
    String sql =
        "UPDATE "
            + table
            + " SET holder = ?, instance = ?, term = "
            + nextTerm("term")
            + ","
            + " expires_at_ms = "
            + clock
            + " + ?, revision = revision + 1"
            + " WHERE name = ? AND expires_at_ms <= "
            + clock
            + " RETURNING term, expires_at_ms";
    return LeaseSql.first(
        c,
        sql,
        rs -> new Claimed(rs.getLong(1), rs.getLong(2), rs.getLong(2) - leaseMs),
        holder,
        instance,
        leaseMs,
        name);
  }

  /**
   * SQLite has no row locks. Plain: a SELECT, run first inside the transaction, fixes its read
   * snapshot; a claim that commits after it makes the transaction's first write fail with
   * SQLITE_BUSY_SNAPSHOT (WAL), so a stale holder's write never lands after the claim. But a
   * deferred transaction that read first cannot wait for the write lock either: under concurrent
   * writers its first write fails at once instead of queueing in the busy handler (measured: 8
   * threads of fenced transactions failed within seconds). Strict: a no-op UPDATE of the lease row,
   * run with executeQuery for its RETURNING, takes the database's write lock as the transaction's
   * first act, so concurrent writers queue behind it as they do behind any writer, and the next
   * term's claim waits for the transaction like on the servers. It changes no value, and an UPDATE
   * leaves {@code last_insert_rowid()} alone.
   *
   * <p>The refusal: the row is found by name, and a CASE over its other columns calls {@code
   * json_extract} with a path that is not one when they do not match: {@code JSON path error near
   * 'LF001 lease not held <nonce>: term 3'}. The path is built from the row's term, so it is not a
   * constant SQLite could evaluate once ahead of the rows. A missing row gives no row (and no
   * error).
   */
  @Override
  public String verifySql(boolean strict) {
    String refusing =
        " WHERE name = ? AND CASE WHEN holder = ? AND term = ? AND expires_at_ms > "
            + clock
            + " THEN 1 ELSE json_extract('{}', '"
            + REFUSAL_TEXT
            + ": term ' || term) END";
    if (strict) {
      return "UPDATE " + table + " SET revision = revision" + refusing + " RETURNING term";
    }
    return "SELECT term FROM " + table + refusing;
  }

  @Override
  public String clientCheckedVerifySql(boolean strict) {
    if (strict) {
      return "UPDATE "
          + table
          + " SET revision = revision WHERE name = ? AND holder = ?"
          + " AND term = ? AND expires_at_ms > "
          + clock
          + " RETURNING term";
    }
    return "SELECT term FROM "
        + table
        + " WHERE name = ? AND holder = ? AND term = ?"
        + " AND expires_at_ms > "
        + clock;
  }

  // ---- scheduler slots ------------------------------------------------------------------------

  /** {@link Dialect#claimSlot}'s compare-and-set compares the slot columns with this. */
  @Override
  String nullSafeEquals() {
    return "IS";
  }

  /** One UPDATE ... RETURNING, as {@link #claim}. */
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
            + (once ? " AND (rerun_slot_ms IS NULL OR rerun_slot_ms <> unfinished_slot_ms)" : "")
            + " RETURNING term";
    return LeaseSql.first(c, sql, rs -> rs.getLong(1), holder, instance, leaseMs, name, instantMs);
  }
}
