package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDriver;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.tomcat.jdbc.pool.DataSource;
import org.apache.tomcat.jdbc.pool.PoolProperties;

/**
 * Issue 9, path 6: a pool that does not roll back when a connection is returned (Tomcat JDBC, whose
 * {@code rollbackOnReturn} is off by default), with the fence inside it ({@code jdbc:fenced:}): the
 * wrapper lives with the physical connection and never sees the borrower's close. A holder leaves
 * its verified transaction open; the next borrower, on another thread without the lease, must not
 * receive it.
 */
class PoolHandOverTest {

  private static DataSource tomcat(Fixture f) throws SQLException {
    PoolProperties p = new PoolProperties();
    p.setUrl(FencedDriver.PREFIX + PoolPlacementTest.realUrl(f).substring("jdbc:".length()));
    p.setDriverClassName(FencedDriver.class.getName());
    p.setMaxActive(1);
    p.setMaxIdle(1);
    p.setMinIdle(0);
    p.setInitialSize(0);
    p.setRollbackOnReturn(false); // the default, spelled out
    p.setCommitOnReturn(false);
    return new DataSource(p);
  }

  @OnEveryDatabase
  void theNextBorrowerOnAnotherThreadNeverReceivesAVerifiedTransaction(TestDatabase db)
      throws Exception {
    assertEquals("clean", handOver(db, false));
  }

  /**
   * Negative control: without the check the next borrower gets the holder's transaction (and fails
   * with LF003 on the first statement it sends in it).
   */
  @OnEveryDatabase
  void negativeControlWithoutTheCheckTheTransactionReachesTheNextBorrower(TestDatabase db)
      throws Exception {
    assertEquals(LeaseLostSQLException.LEASE_CHANGED, handOver(db, true));
  }

  private static String handOver(TestDatabase db, boolean weakened) throws Exception {
    FencingOptions before = FencedDriver.defaultOptions();
    ExecutorService holderThread = Executors.newSingleThreadExecutor();
    ExecutorService nextThread = Executors.newSingleThreadExecutor();
    try (Fixture f = new Fixture(db, 2)) {
      FencingOptions.Builder b = f.options();
      FencedDriver.setDefaultOptions(
          (weakened ? WeakenedFence.weaken(b, WeakenedFence.NO_ABANDON_CHECK) : b).build());
      Lease lease = f.holding("pool");
      DataSource pool = tomcat(f);
      try {
        on(
            holderThread,
            () -> {
              try (LeaseContext.Scope scope = LeaseContext.bind(lease);
                  Connection c = pool.getConnection()) {
                c.setAutoCommit(false);
                f.insert(c, 1, lease.term());
                // returned without commit or rollback: the pool keeps the transaction open
              }
              return null;
            });
        assertEquals(1, f.verified.get());
        String outcome =
            on(
                nextThread,
                () -> {
                  try (Connection c = pool.getConnection()) {
                    assertFalse(LeaseContext.current().isPresent());
                    c.setAutoCommit(false);
                    try {
                      f.insert(c, 2, 0);
                    } catch (LeaseLostSQLException e) {
                      c.rollback();
                      return e.getSQLState();
                    }
                    c.commit();
                    return "clean";
                  }
                });
        if (outcome.equals("clean")) {
          assertEquals(0, f.count("id = 1"), "the abandoned transaction was rolled back");
          assertEquals(1, f.count("id = 2"), "the next borrower's own work committed");
        }
        return outcome;
      } finally {
        pool.close(true);
      }
    } finally {
      FencedDriver.setDefaultOptions(before);
      holderThread.shutdownNow();
      nextThread.shutdownNow();
    }
  }

  private static <T> T on(ExecutorService thread, Callable<T> work) throws Exception {
    try {
      return thread.submit(work).get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
    }
  }
}
