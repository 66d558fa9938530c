package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.FailingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Invariant 5 of DESIGN.md: bad input fails fast, before any SQL runs, with an error that names
 * what is wrong and says what to do. "Before any SQL" is proven by a DataSource that refuses every
 * connection: a validation error, not a connection error, must come out.
 */
class ValidationTest {

  // ---- timings ---------------------------------------------------------------------------------

  static Stream<Arguments> brokenTimings() {
    return Stream.of(
        broken("lease zero", b -> b.leaseDuration(Duration.ZERO), "leaseDuration must be positive"),
        broken(
            "renew negative",
            b -> b.renewInterval(Duration.ofMillis(-1)),
            "renewInterval must be positive"),
        broken(
            "attempt zero",
            b -> b.attemptTimeout(Duration.ZERO),
            "attemptTimeout must be positive"),
        broken(
            "deadline zero", b -> b.localDeadline(Duration.ZERO), "localDeadline must be positive"),
        broken(
            "lease beyond int millis",
            b -> b.leaseDuration(Duration.ofDays(30)),
            "leaseDuration must be at most"),
        broken(
            "grace negative",
            b -> b.gracePeriod(Duration.ofMillis(-1)),
            "gracePeriod must not be negative"),
        broken("rate negative", b -> b.maxClockRateError(-0.01), "maxClockRateError must be in"),
        broken("rate one half", b -> b.maxClockRateError(0.5), "maxClockRateError must be in"),
        broken("rate NaN", b -> b.maxClockRateError(Double.NaN), "maxClockRateError must be in"),
        broken(
            "renew equals deadline",
            b -> b.renewInterval(Duration.ofSeconds(10)),
            "renewInterval (10000 ms) must be shorter than localDeadline (10000 ms)"),
        broken(
            "attempt longer than deadline",
            b -> b.attemptTimeout(Duration.ofSeconds(11)),
            "attemptTimeout (11000 ms) must be shorter than localDeadline (10000 ms)"),
        broken(
            "deadline equals lease",
            b -> b.localDeadline(Duration.ofSeconds(15)).maxClockRateError(0),
            "localDeadline (15000 ms) must be shorter than leaseDuration × (1 − maxClockRateError)"),
        broken(
            "deadline within the clock error",
            b -> b.localDeadline(Duration.ofMillis(13_600)),
            "localDeadline (13600 ms) must be shorter than leaseDuration × (1 − maxClockRateError)"
                + " = 13500 ms"));
  }

  private static Arguments broken(
      String what, UnaryOperator<LeaseTimings.Builder> change, String message) {
    return Arguments.of(what, change, message);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("brokenTimings")
  void brokenTimingsNameTheBrokenRelation(
      String what, UnaryOperator<LeaseTimings.Builder> change, String message) {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> change.apply(LeaseTimings.builder()).build());
    assertTrue(e.getMessage().contains(message), e.getMessage());
  }

  @Test
  void defaultsAndTheDesignTimingsAreValid() {
    LeaseTimings d = LeaseTimings.DEFAULTS;
    assertEquals(Duration.ofSeconds(15), d.leaseDuration());
    assertEquals(Duration.ofSeconds(2), d.renewInterval());
    assertEquals(Duration.ofSeconds(5), d.attemptTimeout());
    assertEquals(Duration.ofSeconds(10), d.localDeadline());
    assertEquals(Duration.ofSeconds(5), d.gracePeriod());
    assertEquals(0.10, d.maxClockRateError());
    LeaseTimings copy = d.toBuilder().build();
    assertEquals(d.toString(), copy.toString());
    assertDoesNotThrow(() -> Fixture.timings(400, 50, 250, 200, 0));
  }

  // ---- names, table identifiers, instance
  // --------------------------------------------------------

  /** A manager whose DataSource refuses connections from now on: any SQL would fail loudly. */
  private static LeaseManager noSqlManager(Fixture f) {
    FailingDataSource ds = new FailingDataSource(f.admin);
    LeaseManager m = f.manager(ds, "validation", LeaseTimings.DEFAULTS);
    ds.failing(true);
    return m;
  }

  @OnEveryDatabase
  void badLeaseNamesAreRefusedBeforeAnySql(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = noSqlManager(f);
      assertRefused(() -> m.tryClaim(""), "lease name must not be empty");
      assertRefused(() -> m.tryClaim(null), "lease name must not be empty");
      assertRefused(
          () -> m.tryClaim("x".repeat(129)),
          "is 129 characters long; the lease table" + " holds at most 128: use a shorter name");
      assertRefused(() -> m.tryClaim("job\nname"), "contains control characters; remove them");
      assertRefused(() -> m.tryClaim("nul\u0000"), "contains control characters");
      assertRefused(() -> m.runIfFree("", l -> null), "lease name must not be empty");
    }
  }

  /**
   * MySQL and MariaDB compare VARCHAR with PAD SPACE collations (utf8mb4_bin included): 'job' and
   * 'job ' are the same primary key there and different ones elsewhere. Such names are refused, so
   * a name means the same lease on every database.
   */
  @OnEveryDatabase
  void namesEndingInASpaceAreRefusedBecauseMySqlIgnoresTrailingSpaces(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = f.manager("validation", LeaseTimings.DEFAULTS);
      Lease job = m.tryClaim("job").orElseThrow();
      assertRefused(() -> m.tryClaim("job "), "ends with a space");
      assertRefused(() -> m.tryClaim("job\u00a0"), "ends with a space");
      assertTrue(m.tryClaim(" job").isPresent(), "leading spaces compare exactly everywhere");
      assertTrue(m.tryClaim("j o b").isPresent());
      job.release();
    }
  }

  /** The widest accepted name fits the column on every database, in characters, not bytes. */
  @OnEveryDatabase
  void theLongestAcceptedNameFitsTheColumn(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = f.manager("validation", LeaseTimings.DEFAULTS);
      String widest = "é".repeat(64) + "\uD83D\uDE00".repeat(64); // 128 code points, 384 bytes
      Lease lease = m.tryClaim(widest).orElseThrow();
      assertTrue(lease.verify());
      assertEquals(lease.holder(), f.row(widest).holder());
      lease.release();
    }
  }

  @ParameterizedTest(name = "[{index}] {0}")
  @ValueSource(
      strings = {
        "leases; drop table x",
        "leases;drop",
        "\"leases\"",
        "`leases`",
        "[leases]",
        "leases--",
        "lea ses",
        "1leases",
        "a.b.c",
        ".leases",
        "leases.",
        "",
        "l\u00e9ases",
        "leases\u0000",
        "t234567890123456789012345678901234567890123456789012345678901234"
      })
  void badTableNamesAreRefusedBeforeAnySql(String table) {
    try (Fixture f = new Fixture(TestDatabase.SQLITE)) {
      FailingDataSource refusing = new FailingDataSource(f.admin);
      refusing.failing(true);
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> LeaseManager.builder(refusing).table(table).instance("x").build());
      assertTrue(
          e.getMessage()
              .contains("is not a plain SQL identifier: use letters, digits and" + " '_'"),
          e.getMessage());
      assertEquals(0, refusing.refused(), "no connection was asked for");
      assertThrows(IllegalArgumentException.class, () -> LeaseManager.ddl(Database.MYSQL, table));
    }
    assertThrows(
        IllegalArgumentException.class,
        () -> LeaseManager.builder(new FailingDataSource(null)).table(null).build());
  }

  @OnEveryDatabase
  void schemaQualifiedTableNamesWork(TestDatabase db) {
    String schema =
        switch (db) {
          case POSTGRESQL -> "public";
          case MYSQL, MARIADB -> "test";
          case SQLITE -> "main";
        };
    try (Fixture f = new Fixture(db)) {
      LeaseManager m =
          f.track(
              LeaseManager.builder(f.admin)
                  .table(schema + "." + f.table)
                  .instance("qualified")
                  .failurePolicy(FailurePolicy.logOnly())
                  .build());
      Lease lease = m.tryClaim("qualified").orElseThrow();
      assertEquals(lease.holder(), f.row("qualified").holder());
      lease.release();
    }
  }

  @Test
  void badInstancesAndClockFunctionsAreRefused() {
    try (Fixture f = new Fixture(TestDatabase.SQLITE)) {
      FailingDataSource refusing = new FailingDataSource(f.admin);
      refusing.failing(true);
      assertRefused(
          () -> LeaseManager.builder(refusing).instance(" ").build(), "instance must not be empty");
      assertRefused(
          () -> LeaseManager.builder(refusing).instance("i".repeat(129)).build(),
          "is longer than 128 characters; use a shorter one");
      assertRefused(
          () -> LeaseManager.builder(refusing).clockFunctionForTesting("now(); drop"),
          "clock function name 'now(); drop' is not a plain SQL identifier");
      assertEquals(0, refusing.refused());
      // no instance given: host/pid, within the column
      LeaseManager m =
          f.track(
              LeaseManager.builder(f.admin)
                  .table(f.table)
                  .failurePolicy(FailurePolicy.logOnly())
                  .build());
      assertTrue(m.instance().contains("/" + ProcessHandle.current().pid()), m.instance());
    }
  }

  private interface ThrowingCall {
    void run() throws Exception;
  }

  private static void assertRefused(ThrowingCall call, String message) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
    assertTrue(e.getMessage().contains(message), e.getMessage());
  }

  // ---- databases and tables
  // ----------------------------------------------------------------------

  @Test
  void unsupportedDatabaseIsRefusedNamingTheSupportedOnes() {
    LeaseException e =
        assertThrows(
            LeaseException.class,
            () ->
                LeaseManager.builder(new UrlDataSource("jdbc:h2:mem:x"))
                    .instance("h2")
                    .createTableIfMissing()
                    .build());
    assertTrue(e.getMessage().contains("database H2"), e.getMessage());
    assertTrue(
        e.getMessage().contains("PostgreSQL, MySQL, MariaDB or SQLite 3.42 or later"),
        e.getMessage());
  }

  @OnEveryDatabase
  void missingTableSaysHowToCreateIt(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      String missing = TestDatabase.uniqueTable("missing");
      LeaseException e =
          assertThrows(
              LeaseException.class,
              () -> LeaseManager.builder(f.admin).table(missing).instance("m").build());
      assertTrue(
          e.getMessage().contains("lease table " + missing + " does not exist"), e.getMessage());
      assertTrue(e.getMessage().contains("createTableIfMissing()"), e.getMessage());
      // MySQL Connector/J connected to MariaDB detects MariaDB: the server decides, not the driver
      String database = db.isMySqlFamily() ? "(MYSQL|MARIADB)" : Fixture.database(db).name();
      assertTrue(
          e.getMessage()
              .matches(
                  "(?s).*LeaseManager\\.ddl\\(Database\\."
                      + database
                      + ", \""
                      + missing
                      + "\"\\).*"),
          e.getMessage());
    }
  }

  /** A table by that name that is not a lease table (an old or foreign one) is named as such. */
  @OnEveryDatabase
  void tableWithoutTheLeaseColumnsSaysSo(TestDatabase db) throws SQLException {
    try (Fixture f = new Fixture(db)) {
      String foreign = TestDatabase.uniqueTable("foreign");
      try {
        try (Connection c = f.admin.getConnection();
            Statement s = c.createStatement()) {
          s.execute(
              "CREATE TABLE "
                  + foreign
                  + " (name varchar(128) PRIMARY KEY, holder"
                  + " varchar(64))");
        }
        LeaseException e =
            assertThrows(
                LeaseException.class,
                () -> LeaseManager.builder(f.admin).table(foreign).instance("m").build());
        assertTrue(e.getMessage().contains("lease table " + foreign), e.getMessage());
        assertTrue(e.getMessage().contains("LeaseManager.ddl(Database."), e.getMessage());
        assertTrue(
            !e.getMessage().contains("cannot reach"),
            "not a connection problem: " + e.getMessage());
      } finally {
        TestDatabase.dropQuietly(f.admin, foreign);
      }
    }
  }

  /** The name passes as an identifier but is reserved: the error is about creating the table. */
  @OnEveryDatabase
  void tableThatCannotBeCreatedSaysSo(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseException e =
          assertThrows(
              LeaseException.class,
              () ->
                  LeaseManager.builder(f.admin)
                      .table("select")
                      .instance("m")
                      .createTableIfMissing()
                      .build());
      assertTrue(
          e.getMessage().startsWith("could not create lease table select on "), e.getMessage());
      assertTrue(e.getMessage().contains("LeaseManager.ddl(Database."), e.getMessage());
    }
  }

  @OnEveryDatabase
  void tableDroppedAfterStartSaysHowToCreateIt(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = f.manager("m", LeaseTimings.DEFAULTS);
      TestDatabase.dropQuietly(f.admin, f.table);
      LeaseException e = assertThrows(LeaseException.class, () -> m.tryClaim("gone"));
      assertTrue(
          e.getMessage().contains("lease table " + f.table + " does not exist"), e.getMessage());
    }
  }

  @OnEveryDatabase
  void createTableIfMissingIsIdempotentAndMatchesThePublishedDdl(TestDatabase db)
      throws SQLException {
    try (Fixture f = new Fixture(db)) {
      String created = TestDatabase.uniqueTable("created");
      try {
        for (int i = 0; i < 2; i++) {
          LeaseManager m =
              f.track(
                  LeaseManager.builder(f.admin)
                      .table(created)
                      .instance("c")
                      .failurePolicy(FailurePolicy.logOnly())
                      .createTableIfMissing()
                      .build());
          assertEquals(LeaseManager.ddl(Fixture.database(db), created), m.ddl());
          long before = m.databaseTimeMillis();
          long term = m.tryClaim("n" + i).orElseThrow().term();
          assertTrue(
              term > before * 1000 && term <= (m.databaseTimeMillis() + 1) * 1000 + 1,
              "a new row's first term is the database clock in ms × 1000, + 1: " + term);
        }
        try (Connection c = f.admin.getConnection();
            Statement s = c.createStatement();
            ResultSet rs =
                s.executeQuery(
                    "SELECT name, holder, instance, term, expires_at_ms,"
                        + " revision, slot_ms, unfinished_slot_ms, rerun_slot_ms FROM "
                        + created)) {
          int rows = 0;
          while (rs.next()) {
            rows++;
          }
          assertEquals(2, rows);
        }
      } finally {
        TestDatabase.dropQuietly(f.admin, created);
      }
    }
  }
}
