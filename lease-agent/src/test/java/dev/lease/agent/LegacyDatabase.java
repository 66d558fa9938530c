package dev.lease.agent;

import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import javax.sql.DataSource;

/**
 * One database of an agent test as the child JVMs and the checks see it: the URL the legacy
 * application and the agent both use (the lease table lives in the application's database), the
 * application's table of writes, and the lease table the agent creates.
 */
final class LegacyDatabase implements AutoCloseable {

  final TestDatabase db;
  final String url;
  final String events = TestDatabase.uniqueTable("agent_events");
  final String leases = TestDatabase.uniqueTable("agent_leases");
  private final DataSource ds;

  /** The databases of the agent tests. */
  static Stream<TestDatabase> databases() {
    return Stream.of(TestDatabase.POSTGRESQL, TestDatabase.MARIADB, TestDatabase.SQLITE);
  }

  LegacyDatabase(TestDatabase db) throws SQLException {
    // SQLite: one file shared by both JVMs, WAL so a reader never blocks the lease writer, and a
    // busy timeout so writers queue instead of failing at once
    this(db, db.isSqlite() ? db.url() + "?journal_mode=WAL&busy_timeout=10000" : db.url());
  }

  /** On {@code url}, a database of {@code db}'s kind. */
  LegacyDatabase(TestDatabase db, String url) throws SQLException {
    this.db = db;
    this.url = url;
    this.ds = new UrlDataSource(url);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + events + " (writer VARCHAR(64) NOT NULL, seq INT NOT NULL)");
    }
  }

  /** Agent arguments for this database: its URL, the test's lease table, created at start. */
  String agentArgs(String more) {
    return "url=" + url + ",table=" + leases + ",create-table=true," + more;
  }

  /**
   * Makes {@code leaseName} held by another process ("Z") for an hour, so that every agent started
   * on this database is a replica in leader mode: the tests of what a replica does need no second
   * JVM. Creates the lease table as the agent would.
   */
  void holdLeaseElsewhere(String leaseName) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      for (String ddl : dev.lease.core.LeaseManager.ddl(database(), leases)) {
        s.execute(ddl);
      }
    }
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO "
                    + leases
                    + " (name, holder, instance, term, expires_at_ms) VALUES (?, 'z', 'Z', 1, ?)")) {
      ps.setString(1, leaseName);
      ps.setLong(2, System.currentTimeMillis() + 3_600_000L);
      ps.executeUpdate();
    }
  }

  /** After a process held {@code leaseName} and released it: now another process ("Z") holds it. */
  void releaseAndHoldElsewhere(String leaseName) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "UPDATE "
                    + leases
                    + " SET holder = 'z', instance = 'Z', term = term + 1, expires_at_ms = ?"
                    + " WHERE name = ?")) {
      ps.setLong(1, System.currentTimeMillis() + 3_600_000L);
      ps.setString(2, leaseName);
      if (ps.executeUpdate() != 1) {
        throw new IllegalStateException("no lease row " + leaseName + " in " + leases);
      }
    }
  }

  /** Makes {@code leaseName} free (expired), whoever held it. */
  void expire(String leaseName) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("UPDATE " + leases + " SET expires_at_ms = 0 WHERE name = ?")) {
      ps.setString(1, leaseName);
      ps.executeUpdate();
    }
  }

  /** The lease row's expiry (0: released), if the row exists. */
  Optional<Long> expiresAt(String leaseName) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT expires_at_ms FROM " + leases + " WHERE name = ?")) {
      ps.setString(1, leaseName);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rs.getLong(1)) : Optional.empty();
      }
    }
  }

  DataSource dataSource() {
    return ds;
  }

  private dev.lease.core.Database database() {
    return dev.lease.core.Database.valueOf(db.name());
  }

  /** The seqs that {@code writer} has committed, as any other session sees them now. */
  Set<Integer> committed(String writer) throws SQLException {
    Set<Integer> seqs = new TreeSet<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT seq FROM " + events + " WHERE writer = ?")) {
      ps.setString(1, writer);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          seqs.add(rs.getInt(1));
        }
      }
    }
    return seqs;
  }

  /** Rows per seq: how often each trigger's job ran, across writers. */
  int runs(int seq) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT COUNT(*) FROM " + events + " WHERE seq = ?")) {
      ps.setInt(1, seq);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  /** The lease row's holder instance and term, if the row exists. */
  Optional<Holder> holder(String leaseName) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT instance, term FROM " + leases + " WHERE name = ?")) {
      ps.setString(1, leaseName);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next()
            ? Optional.of(new Holder(rs.getString(1), rs.getLong(2)))
            : Optional.empty();
      } catch (SQLException e) {
        return Optional.empty(); // the agent has not created the table yet
      }
    }
  }

  record Holder(String instance, long term) {}

  @Override
  public void close() {
    TestDatabase.dropQuietly(ds, events, leases);
  }

  /**
   * The legacy application on Java 17 writing to this database through {@code pool} as {@code
   * instance}, with the agent's {@code agentArgs} and more JVM options.
   */
  AppProcess writer(String instance, String agentArgs, List<String> jvmOptions, String pool) {
    return AppProcess.start(
        instance,
        AppProcess.JAVA_17,
        agentArgs,
        Map.of(),
        jvmOptions,
        false,
        legacy.LegacyApp.class.getName(),
        "writer",
        url,
        events,
        instance,
        pool);
  }
}
