package dev.lease.core.group;

import dev.lease.core.Database;
import dev.lease.core.dialect.Dialect;

/**
 * The SQL texts of a {@link LeaseGroup} that differ between databases; {@link GroupSql} binds and
 * runs them the same way for all. Placeholders, replaced once when the group is built: {@code
 * {members}} the members table, {@code {table}} the lease table, {@code {keyed}} the lease table
 * with its primary key forced where the database needs it ({@link Dialect#tableByPrimaryKey}),
 * {@code {clock}} the database clock in UTC epoch ms (the dialect's expression), {@code {lock}} the
 * claim's row lock (left out only by the tests' negative control), {@code {clockMicros}} the clock
 * in µs, {@code {nextTerm}} / {@code {nextTermOfRow}} the term a hand-over writes ({@code max(term
 * + 1, clock in µs)}, of {@code t.term} / {@code term}), {@code {nextTermBound}} the same with the
 * clock bound as a parameter; and per statement {@code {keys}} (one {@code ?} per key) and {@code
 * {rows}} (one {@code (?, start term)} per key). Every parameter is bound; no user value is
 * concatenated.
 *
 * @param membersDdl creates the members table if missing
 * @param announce inserts this member's row unless it exists (parameters: group, member, instance,
 *     draining); its own transaction, see {@link GroupSql#announce}
 * @param createRows inserts the lease rows that do not exist, expired, at the start term
 *     (parameters: the keys); rows that exist are left alone
 * @param claim parameters: the keys, limit, then (one statement) holder, instance, lease ms. One
 *     statement that claims up to limit free keys and returns {@code (name, new term)} when {@code
 *     claimUpdate} is null; else the locking read of up to limit free rows returning {@code (name,
 *     term, clock in µs)}, and {@code claimUpdate} claims exactly those rows
 * @param claimUpdate null, or the UPDATE of the locked rows (parameters: holder, instance, the
 *     clock read (the new terms' floor), lease ms, the keys read)
 */
record GroupSqlText(
    String membersDdl, String announce, String createRows, String claim, String claimUpdate) {

  static GroupSqlText of(Database database) {
    return switch (database) {
      case POSTGRESQL -> POSTGRESQL;
      case MYSQL -> MYSQL;
      case MARIADB -> MARIADB;
      case SQLITE -> SQLITE;
    };
  }

  static GroupSqlText of(Dialect dialect) {
    return switch (dialect.product()) {
      case "PostgreSQL" -> POSTGRESQL;
      case "MySQL" -> MYSQL;
      case "MariaDB" -> MARIADB;
      case "SQLite" -> SQLITE;
      default -> throw new IllegalStateException("no LeaseGroup SQL for " + dialect.product());
    };
  }

  private static final String COLUMNS = "(group_name, member, instance, heartbeat_ms, draining)";

  /**
   * PostgreSQL. The claim is one statement: the CTE locks the rows {@code FOR UPDATE}, as the
   * single claim does; that lock conflicts with the {@code FOR KEY SHARE} of a strict verify, so no
   * key is claimed for term t+1 while a transaction verified under term t is open. {@code SKIP
   * LOCKED} steps over such a row (and over rows a peer's batch is claiming) instead of waiting: it
   * is tried again next pass, and one paused transaction never holds up the other keys. READ
   * COMMITTED re-checks the expiry against the newest version of each row it locks, so a row a peer
   * claimed meanwhile is not taken. Keys come sorted, so concurrent creates do not deadlock.
   */
  static final GroupSqlText POSTGRESQL =
      new GroupSqlText(
          "CREATE TABLE IF NOT EXISTS {members} (group_name varchar("
              + Dialect.NAME_WIDTH
              + ") NOT NULL, member varchar("
              + Dialect.HOLDER_WIDTH
              + ") NOT NULL, instance varchar("
              + Dialect.INSTANCE_WIDTH
              + ") NOT NULL DEFAULT '', heartbeat_ms bigint NOT NULL,"
              + " draining int NOT NULL DEFAULT 0, PRIMARY KEY (group_name, member))",
          "INSERT INTO {members} "
              + COLUMNS
              + " VALUES (?, ?, ?, {clock}, ?) ON CONFLICT (group_name, member) DO NOTHING",
          "INSERT INTO {table} (name, term) VALUES {rows} ON CONFLICT (name) DO NOTHING",
          "WITH free AS (SELECT name FROM {table} WHERE name IN ({keys})"
              + " AND expires_at_ms <= {clock} ORDER BY name LIMIT ?{lock})"
              + " UPDATE {table} t SET holder = ?, instance = ?, term = {nextTerm},"
              + " expires_at_ms = {clock} + ?, revision = t.revision + 1"
              + " FROM free WHERE t.name = free.name RETURNING t.name, t.term",
          null);

  /**
   * MySQL 8 and MariaDB 10.6 or later (InnoDB: both have {@code SKIP LOCKED}). utf8mb4_bin: group
   * names compare exactly, as lease names do. INSERT IGNORE, as the single create: on a duplicate
   * it takes only a shared lock on that row (compatible with strict verifies, and with a peer's
   * announcement of another row). The claim is two statements in one transaction (no UPDATE ...
   * RETURNING): a locking read with {@code FOR UPDATE SKIP LOCKED} (its exclusive lock conflicts
   * with the {@code LOCK IN SHARE MODE} of a strict verify, so such a row is skipped, as are rows a
   * peer's batch is claiming; a locking read sees the newest committed row; it also reads the
   * database clock in µs), then one UPDATE of exactly those rows, still locked, with that clock
   * bound as the floor, so each new term is {@code max(term read + 1, clock read)}; it changes
   * {@code term}, so its count is the number claimed whatever rows the driver counts. Both force
   * the primary key ({@code {keyed}}, {@link Dialect#tableByPrimaryKey}): a scan of the table would
   * lock rows the claim does not take (MariaDB: an UPDATE of a few hundred names scanned all 1,000
   * rows, and two members' claims deadlocked). At 1,000 names MariaDB would turn the read's list
   * into a subquery ({@code in_predicate_conversion_threshold}) and scan anyway: {@link #MARIADB}
   * sets that threshold off for the statement.
   */
  static final GroupSqlText MYSQL =
      new GroupSqlText(
          "CREATE TABLE IF NOT EXISTS {members} (group_name varchar("
              + Dialect.NAME_WIDTH
              + ") CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, member varchar("
              + Dialect.HOLDER_WIDTH
              + ") CHARACTER SET ascii NOT NULL, instance varchar("
              + Dialect.INSTANCE_WIDTH
              + ") CHARACTER SET utf8mb4 NOT NULL DEFAULT '', heartbeat_ms bigint NOT NULL,"
              + " draining int NOT NULL DEFAULT 0, PRIMARY KEY (group_name, member))"
              + " ENGINE=InnoDB",
          "INSERT IGNORE INTO {members} " + COLUMNS + " VALUES (?, ?, ?, {clock}, ?)",
          "INSERT IGNORE INTO {table} (name, term) VALUES {rows}",
          "SELECT name, term, {clockMicros} FROM {keyed} WHERE name IN ({keys})"
              + " AND expires_at_ms <= {clock} ORDER BY name LIMIT ?{lock}",
          "UPDATE {keyed} SET holder = ?, instance = ?, term = {nextTermBound},"
              + " expires_at_ms = {clock} + ?, revision = revision + 1"
              + " WHERE name IN ({keys}) AND expires_at_ms <= {clock}");

  /**
   * MariaDB: {@link #MYSQL}, but MariaDB turns an IN list of 1,000 names (a full chunk) into a
   * subquery and scans the whole primary key, locking rows the claim does not name (other holders'
   * verifies and renewals then wait for it); the claim read's own setting keeps the list a range.
   * {@link GroupSql} reads it through {@link Dialect#executeRead} (MySQL Connector/J refuses
   * executeQuery on {@code SET STATEMENT ... FOR}).
   */
  static final GroupSqlText MARIADB =
      new GroupSqlText(
          MYSQL.membersDdl(),
          MYSQL.announce(),
          MYSQL.createRows(),
          "SET STATEMENT in_predicate_conversion_threshold = 0 FOR " + MYSQL.claim(),
          MYSQL.claimUpdate());

  /**
   * SQLite 3.42 or later. The claim is one UPDATE ... RETURNING (run with executeQuery: sqlite-jdbc
   * refuses executeUpdate on it). SQLite has no row locks: the UPDATE needs the database's single
   * write lock, which a strict verify took as its transaction's first act, so the batch waits (the
   * busy timeout, bounded by the attempt timeout) for every open verified transaction, as the
   * single claim does. 'now' is fixed within the statement, so the CTE and the UPDATE agree on what
   * is expired.
   */
  static final GroupSqlText SQLITE =
      new GroupSqlText(
          "CREATE TABLE IF NOT EXISTS {members} (group_name TEXT NOT NULL, member TEXT NOT NULL,"
              + " instance TEXT NOT NULL DEFAULT '', heartbeat_ms INTEGER NOT NULL,"
              + " draining INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (group_name, member))",
          "INSERT INTO {members} "
              + COLUMNS
              + " VALUES (?, ?, ?, {clock}, ?) ON CONFLICT (group_name, member) DO NOTHING",
          "INSERT INTO {table} (name, term) VALUES {rows} ON CONFLICT (name) DO NOTHING",
          "WITH free AS (SELECT name FROM {table} WHERE name IN ({keys})"
              + " AND expires_at_ms <= {clock} ORDER BY name LIMIT ?)"
              + " UPDATE {table} SET holder = ?, instance = ?, term = {nextTermOfRow},"
              + " expires_at_ms = {clock} + ?, revision = revision + 1"
              + " WHERE name IN (SELECT name FROM free) RETURNING name, term",
          null);
}
