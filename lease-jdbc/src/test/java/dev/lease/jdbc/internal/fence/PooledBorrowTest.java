package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.mchange.v2.c3p0.ComboPooledDataSource;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencedDriver;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import io.agroal.api.AgroalDataSource;
import io.agroal.api.configuration.AgroalConnectionPoolConfiguration.ConnectionValidator;
import io.agroal.api.configuration.supplier.AgroalDataSourceConfigurationSupplier;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.apache.commons.dbcp2.BasicDataSource;
import org.apache.tomcat.jdbc.pool.PoolProperties;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 35 items 4 and 5, through every pool the project supports (HikariCP, DBCP2, Tomcat JDBC,
 * c3p0, Agroal), with the wrapper outside the pool ({@code FencedDataSource.wrap(pool)}) and inside
 * it ({@code jdbc:fenced:}), on every database:
 *
 * <ul>
 *   <li>a connection the pool validated with {@code Connection.isValid()} (each borrow here; what
 *       HikariCP does after half a second idle, and what DBCP2, Tomcat JDBC, c3p0 do with no
 *       validation query) commits every autocommit write under a lease. MySQL Connector/J's ping
 *       leaves its cached autocommit flag false; a fence that acted on it switched the driver to
 *       manual commit and the writes were never committed. Control: {@link
 *       WeakenedFence#TRUST_CACHED_SESSION}, which loses them (Connector/J only);
 *   <li>a borrower with no lease bound, after a stale holder's transactions were refused on the
 *       same physical connection, commits. Control: {@link WeakenedFence#POISON_OUTLIVES}, whose
 *       poison reaches it ({@code LF002}).
 * </ul>
 */
class PooledBorrowTest {

  private static final AtomicInteger IDS = new AtomicInteger();

  enum Pool {
    HIKARI,
    DBCP2,
    TOMCAT,
    C3P0,
    AGROAL
  }

  enum Placement {
    OUTSIDE,
    INSIDE
  }

  static Stream<Arguments> cases() {
    return Stream.of(Pool.values())
        .flatMap(
            p ->
                TestDatabase.all()
                    .flatMap(db -> Stream.of(Placement.values()).map(w -> Arguments.of(db, p, w))));
  }

  /** {@code pool} on {@code url} (the fixture's database), one connection, validated by isValid. */
  private static DataSource pool(Pool pool, String url) throws SQLException {
    switch (pool) {
      case HIKARI:
        {
          HikariConfig cfg = new HikariConfig();
          cfg.setJdbcUrl(url);
          cfg.setMaximumPoolSize(1);
          cfg.setConnectionTimeout(5_000);
          cfg.setPoolName("borrow-" + IDS.incrementAndGet());
          return new HikariDataSource(cfg);
        }
      case DBCP2:
        {
          BasicDataSource ds = new BasicDataSource();
          ds.setUrl(url);
          ds.setMaxTotal(1);
          ds.setTestOnBorrow(true); // no validation query: Connection.isValid()
          ds.setMaxWait(Duration.ofSeconds(5));
          return ds;
        }
      case TOMCAT:
        {
          PoolProperties p = new PoolProperties();
          p.setUrl(url);
          p.setMaxActive(1);
          p.setInitialSize(0);
          p.setMinIdle(0);
          p.setMaxIdle(1);
          p.setTestOnBorrow(true); // no validation query: Connection.isValid()
          p.setMaxWait(5_000);
          return new org.apache.tomcat.jdbc.pool.DataSource(p);
        }
      case C3P0:
        {
          ComboPooledDataSource ds = new ComboPooledDataSource();
          ds.setJdbcUrl(url);
          ds.setMaxPoolSize(1);
          ds.setMinPoolSize(0);
          ds.setInitialPoolSize(0);
          ds.setTestConnectionOnCheckout(true); // its default tester: Connection.isValid()
          ds.setCheckoutTimeout(5_000);
          return ds;
        }
      default:
        return AgroalDataSource.from(
            new AgroalDataSourceConfigurationSupplier()
                .connectionPoolConfiguration(
                    cp ->
                        cp.maxSize(1)
                            .acquisitionTimeout(Duration.ofSeconds(5))
                            .validateOnBorrow(true)
                            .connectionValidator(ConnectionValidator.defaultValidator())
                            .connectionFactoryConfiguration(cf -> cf.jdbcUrl(url))));
    }
  }

  /**
   * The application's fenced DataSource through {@code pool}: the wrapper outside the pool, or
   * inside it (the pool connects to {@code jdbc:fenced:}, with the driver's default options).
   */
  private static DataSource application(Fixture f, Pool pool, Placement placement)
      throws SQLException {
    String url = url(f);
    if (placement == Placement.OUTSIDE) {
      return closeLater(f, pool(pool, url));
    }
    return closeLater(f, pool(pool, FencedDriver.PREFIX + url.substring("jdbc:".length())));
  }

  /** The fixture's database as a URL: for SQLite its file, with a busy timeout. */
  private static String url(Fixture f) throws SQLException {
    if (!f.db.isSqlite()) {
      return f.db.url();
    }
    return f.pool.getDataSource().unwrap(org.sqlite.SQLiteDataSource.class).getUrl()
        + "?busy_timeout=10000";
  }

  private static DataSource closeLater(Fixture f, DataSource ds) {
    f.closeLater(
        () -> {
          if (ds instanceof AutoCloseable c) {
            c.close();
          } else if (ds instanceof ComboPooledDataSource c3p0) {
            c3p0.close();
          }
        });
    return ds;
  }

  private static DataSource fenced(DataSource app, Placement placement, FencingOptions options) {
    return placement == Placement.OUTSIDE ? FencedDataSource.wrap(app, options) : app;
  }

  // ---- item 4: autocommit writes after the pool's isValid() ----------------------------------

  @ParameterizedTest(name = "{0} {1} {2}")
  @MethodSource("cases")
  void autocommitWritesUnderALeaseCommitAfterThePoolValidatedTheConnection(
      TestDatabase db, Pool pool, Placement placement) throws Exception {
    assertEquals(3, autocommitWritesThatCommitted(db, pool, placement, f -> f.options()), db + "");
  }

  /**
   * Negative control: the fence that trusts Connector/J's cached flag switches the driver to manual
   * commit after each ping, and the writes are rolled back at close.
   */
  @ParameterizedTest(name = "mysql {0}")
  @MethodSource("placements")
  void negativeControlTrustingTheDriversCachedFlagLosesAutocommitWrites(Placement placement)
      throws Exception {
    int committed =
        autocommitWritesThatCommitted(
            TestDatabase.MYSQL,
            Pool.HIKARI,
            placement,
            f -> WeakenedFence.weaken(f.options(), WeakenedFence.TRUST_CACHED_SESSION));
    assertFalse(committed == 3, "mysql: the control loses writes (" + committed + " of 3)");
  }

  static Stream<Placement> placements() {
    return Stream.of(Placement.values());
  }

  private static int autocommitWritesThatCommitted(
      TestDatabase db,
      Pool pool,
      Placement placement,
      java.util.function.Function<Fixture, FencingOptions.Builder> options)
      throws Exception {
    FencingOptions before = FencedDriver.defaultOptions();
    try (Fixture f = new Fixture(db, 2)) {
      FencingOptions o = options.apply(f).build();
      FencedDriver.setDefaultOptions(o);
      Lease lease = f.holding("v" + IDS.incrementAndGet());
      DataSource ds = fenced(application(f, pool, placement), placement, o);
      for (int i = 1; i <= 3; i++) {
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection()) {
          c.isValid(2); // what the pool does on borrow after idle, done here for HikariCP too
          f.insert(c, i, lease.term());
        }
      }
      return f.count(null);
    } finally {
      FencedDriver.setDefaultOptions(before);
    }
  }

  // ---- item 5: a borrower without a lease after refused transactions --------------------------

  @ParameterizedTest(name = "{0} {1} {2}")
  @MethodSource("cases")
  void aBorrowerWithNoLeaseCommitsAfterAStaleHoldersTransactionsWereRefused(
      TestDatabase db, Pool pool, Placement placement) throws Exception {
    java.util.List<String> states = new java.util.ArrayList<>();
    assertEquals(
        1,
        borrowerAfterRefusals(
            db, pool, placement, f -> f.options(), states, "tx", "autocommit", "tx-left-open"),
        db + "");
    assertEquals(
        java.util.List.of("LF001", "LF001", "LF001"),
        states,
        db + ": each statement refused on its own, none poisoned by the one before");
  }

  /** Negative control: the poison of the refused autocommit statement reaches the borrower. */
  @OnEveryDatabase
  void negativeControlPoisonThatOutlivesItsTransactionRefusesTheBorrower(TestDatabase db)
      throws Exception {
    assertThrows(
        LeaseLostSQLException.class,
        () ->
            borrowerAfterRefusals(
                db,
                Pool.HIKARI,
                Placement.INSIDE,
                f -> WeakenedFence.weaken(f.options(), WeakenedFence.POISON_OUTLIVES),
                new java.util.ArrayList<>(),
                "autocommit"));
  }

  /**
   * A lease the database gave to a successor (the holder learned it at its verify: lost), then its
   * holder's autocommit statement and transaction, both refused, on the one pooled connection; then
   * a borrower with no lease bound inserts. Returns its committed rows.
   */
  private static int borrowerAfterRefusals(
      TestDatabase db,
      Pool pool,
      Placement placement,
      java.util.function.Function<Fixture, FencingOptions.Builder> options,
      java.util.List<String> refusals,
      String... statements)
      throws Exception {
    FencingOptions before = FencedDriver.defaultOptions();
    try (Fixture f = new Fixture(db, 2)) {
      FencingOptions o = options.apply(f).build();
      FencedDriver.setDefaultOptions(o);
      Lease lease = f.holding("p" + IDS.incrementAndGet());
      f.takeOver(lease);
      assertFalse(lease.verify(), db + ": the holder learns it lost the lease");
      DataSource ds = fenced(application(f, pool, placement), placement, o);
      for (String how : statements) {
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection()) {
          c.setAutoCommit(how.equals("autocommit"));
          refusals.add(
              assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 7, lease.term()))
                  .getSQLState());
          if (how.equals("tx")) {
            c.rollback();
          } // "tx-left-open": the transaction is left to the pool (not every pool rolls back)
        }
      }
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
          s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (1, 0)");
        }
      }
      assertEquals(0, f.count("id = 7"), db + ": nothing of the stale holder");
      return f.count("id = 1");
    } finally {
      FencedDriver.setDefaultOptions(before);
    }
  }
}
