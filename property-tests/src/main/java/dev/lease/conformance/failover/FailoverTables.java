package dev.lease.conformance.failover;

import dev.lease.conformance.Target;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The tables of one failover round, besides the lease table: the fenced data (each row names the
 * holder and term it was written under) and what the promoted server knows of the claims. They
 * replicate with the lease row, so the promoted server's copy is its own history: which claims it
 * has, and how many data rows of the previous term each claim saw committed. PostgreSQL records
 * that with a trigger in the claim's own statement; MariaDB from the lease row's versions and the
 * order of its binary log (see {@link #create}).
 */
final class FailoverTables {

  final String lease;
  final String data;
  final String history;

  /**
   * The steady holder's lease table and data, apart from the hand-over lease's: the checks key the
   * history by term, and terms are unique per lease row only (two rows created in the same
   * millisecond start at the same term).
   */
  final String steadyLease;

  final String steadyData;

  /** Written once after each failover: the promoted server takes writes. */
  final String probe;

  private final boolean versioned;

  FailoverTables(Target target) {
    this.lease = target.newTable("fo_lease");
    this.data = target.newTable("fo_data");
    this.history = target.newTable("fo_claims");
    this.steadyLease = target.newTable("fo_steady");
    this.steadyData = target.newTable("fo_steady_data");
    this.probe = target.newTable("fo_probe");
    this.versioned = target.isMySqlFamily();
  }

  /** Tables to drop at the end (a versioned table drops with its history). */
  String[] all() {
    return versioned
        ? new String[] {data, lease, steadyData, steadyLease, probe}
        : new String[] {data, history, lease, steadyData, steadyLease, probe};
  }

  /** Creates the data and history tables and the trigger; the lease table must exist. */
  void create(Connection c, Target target) throws SQLException {
    List<String> ddl = new ArrayList<>();
    if (target.isPostgres()) {
      ddl.add(
          "CREATE TABLE "
              + data
              + " (id BIGSERIAL PRIMARY KEY, holder VARCHAR(64) NOT NULL, term BIGINT NOT NULL,"
              + " txn BIGINT NOT NULL)");
      ddl.add(
          "CREATE TABLE "
              + steadyData
              + " (id BIGSERIAL PRIMARY KEY, holder VARCHAR(64) NOT NULL, term BIGINT NOT NULL,"
              + " txn BIGINT NOT NULL)");
      ddl.add(historyDdl());
      // A plpgsql function takes a fresh snapshot for each of its queries under READ COMMITTED,
      // and the trigger runs after the claim got its FOR UPDATE lock: the count is what had
      // committed under the previous term when the claim took over.
      ddl.add(
          "CREATE FUNCTION "
              + history
              + "_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
              + " IF TG_OP = 'INSERT' THEN INSERT INTO "
              + history
              + " VALUES (NEW.term, NEW.holder, NULL, 0);"
              + " ELSIF NEW.term <> OLD.term THEN INSERT INTO "
              + history
              + " VALUES (NEW.term, NEW.holder, OLD.term, (SELECT count(*) FROM "
              + data
              + " WHERE term = OLD.term)); END IF; RETURN NEW; END $$");
      ddl.add(
          "CREATE TRIGGER "
              + history
              + "_tr AFTER INSERT OR UPDATE ON "
              + lease
              + " FOR EACH ROW EXECUTE FUNCTION "
              + history
              + "_fn()");
    } else if (target.isMySqlFamily()) {
      // No trigger here: lease-core's claim returns the new term as LAST_INSERT_ID in the OK
      // packet, and a trigger that runs a query clears it (measured: the claim then fails). Nor
      // transaction-precise versioning: MariaDB logs statements on such tables as statements, so
      // the replica re-ran the claim's clock and created a different lease row (measured). Instead:
      // the lease row's versions (system versioning by timestamp, logged as rows) give each term's
      // holder, and the promoted server's binary log gives the commit order of claims and data.
      ddl.add(
          "CREATE TABLE "
              + data
              + " (id BIGINT AUTO_INCREMENT PRIMARY KEY, holder VARCHAR(64) NOT NULL,"
              + " term BIGINT NOT NULL, txn BIGINT NOT NULL) ENGINE=InnoDB");
      ddl.add(
          "CREATE TABLE "
              + steadyData
              + " (id BIGINT AUTO_INCREMENT PRIMARY KEY, holder VARCHAR(64) NOT NULL,"
              + " term BIGINT NOT NULL, txn BIGINT NOT NULL) ENGINE=InnoDB");
      ddl.add("ALTER TABLE " + lease + " ADD SYSTEM VERSIONING");
    } else {
      throw new IllegalArgumentException(
          "a failover run needs a replicated server database (PostgreSQL, MySQL, MariaDB), not "
              + target.label());
    }
    ddl.add("CREATE TABLE " + probe + " (n INT)");
    try (Statement s = c.createStatement()) {
      for (String sql : ddl) {
        s.execute(sql);
      }
    }
    if (!c.getAutoCommit()) {
      c.commit();
    }
  }

  private String historyDdl() {
    return "CREATE TABLE "
        + history
        + " (term BIGINT PRIMARY KEY, holder VARCHAR(64), prev_term BIGINT, prev_rows BIGINT NOT"
        + " NULL)";
  }

  static void insert(Connection c, String table, String holder, long term, long txn)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("INSERT INTO " + table + " (holder, term, txn) VALUES (?, ?, ?)")) {
      ps.setString(1, holder);
      ps.setLong(2, term);
      ps.setLong(3, txn);
      ps.executeUpdate();
    }
  }

  /** A claim as the promoted server recorded it. */
  record Claim(long term, String holder, Long prevTerm, long prevRows) {}

  /** The promoted server's claim history, by term. */
  Map<Long, Claim> claims(Connection c) throws SQLException {
    return versioned ? versionedClaims(c) : triggerClaims(c);
  }

  private Map<Long, Claim> triggerClaims(Connection c) throws SQLException {
    Map<Long, Claim> out = new HashMap<>();
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT term, holder, prev_term, prev_rows FROM " + history)) {
      while (rs.next()) {
        long prev = rs.getLong(3);
        Long prevTerm = rs.wasNull() ? null : prev;
        out.put(rs.getLong(1), new Claim(rs.getLong(1), rs.getString(2), prevTerm, rs.getLong(4)));
      }
    }
    return out;
  }

  /** The holder a claim statement writes (a minted token; the transfer's pending holder is not). */
  private static final Pattern CLAIMED_BY = Pattern.compile("\\bholder = '([0-9a-f]{32})'");

  private static final Pattern WRITTEN_BY = Pattern.compile("VALUES \\('([0-9a-f]+)'");

  /**
   * Each term's holder from the lease row's versions; the order from the binary log, where every
   * statement that changed rows is annotated with its text (binlog_annotate_row_events, on by
   * default, kept by a replica that logs what it applies): a claim names its holder, a data insert
   * (Connector/J sends parameters inline) the holder it wrote for. So for each claim, the rows of
   * the previous term logged before it are the rows it saw committed.
   */
  /** Claims the last {@link #claims} read found in the binary log (MariaDB); -1 on PostgreSQL. */
  int claimsFromLog = -1;

  /** The claims (terms with a holder) in the lease row's history (MariaDB); -1 on PostgreSQL. */
  int termsInHistory = -1;

  private Map<Long, Claim> versionedClaims(Connection c) throws SQLException {
    claimsFromLog = 0;
    Map<String, Long> termOf = new HashMap<>();
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT term, MAX(holder) FROM " + lease + " FOR SYSTEM_TIME ALL GROUP BY term")) {
      while (rs.next()) {
        if (rs.getString(2) != null && !rs.getString(2).isEmpty()) {
          termOf.put(rs.getString(2), rs.getLong(1));
        }
      }
    }
    termsInHistory = termOf.size();
    List<String> logs = new ArrayList<>();
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW BINARY LOGS")) {
      while (rs.next()) {
        logs.add(rs.getString(1));
      }
    }
    Map<Long, Claim> out = new HashMap<>();
    Map<Long, Long> rowsLogged = new HashMap<>();
    Long currentTerm = null;
    // a claim: "UPDATE <lease> [FORCE INDEX (PRIMARY)] SET holder = ..." (lease-core forces the
    // primary key on MySQL/MariaDB; a marker without it found no claim, and invariant 1 was then
    // checked on none: claimsFromLog counts them so that cannot pass unnoticed)
    // a claim names its table as lease-core resolved it: `db`.`table` PARTITION (p0)
    Pattern claimMarker =
        Pattern.compile(
            "UPDATE (`[^`]+`\\.)?`?"
                + Pattern.quote(lease)
                + "`?( PARTITION \\(p0\\))?( FORCE INDEX \\(PRIMARY\\))? SET"
                // the holder assigned in the SET clause (a renewal names it in its WHERE only)
                + "(?:(?!WHERE).)*\\bholder = '");
    String insertMarker = "INSERT INTO " + data + " ";
    // the round's events are in the last logs (.ci/replicas rotates them before each round)
    for (String log : logs.subList(Math.max(0, logs.size() - 3), logs.size())) {
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SHOW BINLOG EVENTS IN '" + log + "'")) {
        while (rs.next()) {
          if (!"Annotate_rows".equals(rs.getString("Event_type"))) {
            continue;
          }
          String info = rs.getString("Info");
          if (claimMarker.matcher(info).find()) {
            Matcher m = CLAIMED_BY.matcher(info);
            Long term = m.find() ? termOf.get(m.group(1)) : null;
            if (term != null && !out.containsKey(term)) {
              long seen = currentTerm == null ? 0 : rowsLogged.getOrDefault(currentTerm, 0L);
              out.put(term, new Claim(term, m.group(1), currentTerm, seen));
              currentTerm = term;
              claimsFromLog++;
            }
          } else if (info.contains(insertMarker)) {
            Matcher m = WRITTEN_BY.matcher(info);
            Long term = m.find() ? termOf.get(m.group(1)) : null;
            // a row whose holder has no version here is the check's other finding
            if (term != null) {
              rowsLogged.merge(term, 1L, Long::sum);
            }
          }
        }
      }
    }
    // Claims no annotation named (none expected) still count as granted.
    termOf.forEach((holder, term) -> out.putIfAbsent(term, new Claim(term, holder, null, 0)));
    return out;
  }

  /** A data row as the promoted server has it. */
  record Row(String holder, long term, long txn) {}

  List<Row> rows(Connection c) throws SQLException {
    List<Row> out = new ArrayList<>();
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT holder, term, txn FROM " + data)) {
      while (rs.next()) {
        out.add(new Row(rs.getString(1), rs.getLong(2), rs.getLong(3)));
      }
    }
    return out;
  }

  /**
   * The promoted server's history against itself: invariant 1 (the claim of t+1 saw every row of
   * term t there is) and every row under a (term, holder) that server granted.
   */
  static void checkHistory(Map<Long, Claim> claims, List<Row> rows, List<String> violations) {
    // Invariant 1 on the promoted history: the claim of t+1 saw every row of term t there is.
    Map<Long, Long> rowsPerTerm = new ConcurrentHashMap<>();
    rows.forEach(r -> rowsPerTerm.merge(r.term(), 1L, Long::sum));
    for (FailoverTables.Claim claim : claims.values()) {
      if (claim.prevTerm() == null) {
        continue;
      }
      long now = rowsPerTerm.getOrDefault(claim.prevTerm(), 0L);
      if (now > claim.prevRows()) {
        violations.add(
            (now - claim.prevRows())
                + " row(s) of term "
                + claim.prevTerm()
                + " committed after the claim of term "
                + claim.term()
                + " (invariant 1)");
      }
    }
    // Every row under a (term, holder) the promoted server granted.
    Set<String> reported = new HashSet<>();
    for (FailoverTables.Row r : rows) {
      FailoverTables.Claim claim = claims.get(r.term());
      if ((claim == null || !r.holder().equals(claim.holder()))
          && reported.add(r.term() + "/" + r.holder())) {
        violations.add(
            "row(s) kept under term "
                + r.term()
                + " of holder "
                + r.holder()
                + ", which the promoted server "
                + (claim == null ? "never granted" : "granted to " + claim.holder()));
      }
    }
  }
}
