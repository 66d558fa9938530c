package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedConnections;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.springframework.dao.ConcurrencyFailureException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.jdbc.UncategorizedSQLException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.jdbc.datasource.LazyConnectionDataSourceProxy;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The way Spring drives a connection: {@code DataSourceTransactionManager} over {@code
 * LazyConnectionDataSourceProxy} over the fenced pool with {@code autoCommit=false}. The
 * transaction manager calls {@code setReadOnly}/{@code setTransactionIsolation} at begin and skips
 * {@code setAutoCommit(false)}; the lazy proxy fetches nothing until the first statement.
 */
class SpringTransactionTest {

  @OnEveryDatabase
  void springTransactionsAreFencedWithoutForcingAFetch(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      HikariConfig cfg = new HikariConfig();
      f.pool.copyStateTo(cfg);
      cfg.setPoolName(cfg.getPoolName() + "-spring");
      cfg.setAutoCommit(false);
      cfg.setMinimumIdle(0);
      HikariDataSource pool = f.closeLater(new HikariDataSource(cfg));
      AtomicInteger fetches = new AtomicInteger();
      DataSource fenced =
          new DelegatingDataSource(FencedDataSource.wrap(pool, f.options().build())) {
            @Override
            public Connection getConnection() throws SQLException {
              fetches.incrementAndGet();
              return super.getConnection();
            }
          };
      LazyConnectionDataSourceProxy lazy = new LazyConnectionDataSourceProxy();
      lazy.setTargetDataSource(fenced);
      // given the pool's defaults, the proxy need not fetch a connection to learn them
      lazy.setDefaultAutoCommit(false);
      lazy.setDefaultTransactionIsolation(
          db.isSqlite()
              ? Connection.TRANSACTION_SERIALIZABLE
              : db == TestDatabase.POSTGRESQL
                  ? Connection.TRANSACTION_READ_COMMITTED
                  : Connection.TRANSACTION_REPEATABLE_READ);
      lazy.afterPropertiesSet();
      DataSourceTransactionManager tm = new DataSourceTransactionManager(lazy);
      JdbcTemplate jdbc = new JdbcTemplate(lazy);
      Lease lease = f.manager("spring", LeaseTimings.DEFAULTS).tryClaim("spring").orElseThrow();

      TransactionTemplate readOnly = new TransactionTemplate(tm);
      readOnly.setReadOnly(true);
      readOnly.setIsolationLevel(
          db.isSqlite()
              ? TransactionDefinition.ISOLATION_SERIALIZABLE
              : TransactionDefinition.ISOLATION_READ_COMMITTED);
      TransactionTemplate readWrite = new TransactionTemplate(tm);
      readWrite.setIsolationLevel(readOnly.getIsolationLevel());

      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        readWrite.executeWithoutResult(status -> {});
        assertEquals(0, fetches.get(), "a transaction without statements fetches no connection");
        assertEquals(0, f.verified.get());

        Integer one =
            readOnly.execute(
                status -> jdbc.queryForObject("SELECT COUNT(*) FROM " + f.data, Integer.class));
        assertEquals(0, one);
        assertEquals(1, f.verified.get(), "read-only and isolation applied, then verified");

        readWrite.executeWithoutResult(
            status -> {
              jdbc.update("INSERT INTO " + f.data + " (id, term) VALUES (?, ?)", 1, lease.term());
              jdbc.update("INSERT INTO " + f.data + " (id, term) VALUES (?, ?)", 2, lease.term());
            });
        assertEquals(2, f.verified.get());
        assertEquals(2, f.count(null));

        f.takeOver(lease);
        Exception e =
            assertThrows(
                Exception.class,
                () ->
                    readWrite.executeWithoutResult(
                        status ->
                            jdbc.update(
                                "INSERT INTO " + f.data + " (id, term) VALUES (?, ?)",
                                3,
                                lease.term())));
        assertInstanceOf(
            UncategorizedSQLException.class,
            e,
            "Spring must not translate LF001 into a transient or retryable failure");
        assertFalse(
            e instanceof TransientDataAccessException || e instanceof ConcurrencyFailureException);
        assertInstanceOf(LeaseLostSQLException.class, e.getCause());
      }
      assertEquals(2, f.count(null), "the refused transaction was rolled back");
      try (Connection c = pool.getConnection()) {
        assertFalse(FencedConnections.isFenced(c), "the pool itself stays unfenced");
        c.rollback();
      }
    }
  }
}
