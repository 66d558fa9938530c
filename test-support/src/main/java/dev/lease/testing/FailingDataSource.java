package dev.lease.testing;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * Wraps a real DataSource and, while {@link #failing(boolean) failing}, refuses every {@code
 * getConnection} as an unreachable database would: the way tests drop renewals without touching the
 * database itself. It can also {@link #stall stall} calls, as an exhausted pool or a server that
 * accepts no connection would: they block until {@link #unstall()} (or an interrupt).
 */
public final class FailingDataSource extends ForwardingDataSource {
  private final AtomicBoolean failing = new AtomicBoolean();
  private final AtomicInteger refused = new AtomicInteger();
  private final AtomicInteger stalledCalls = new AtomicInteger();
  private final Object stallLock = new Object();
  private int skipBeforeStall;
  private int toStall;
  private CountDownLatch unstalled = new CountDownLatch(0);

  public FailingDataSource(DataSource delegate) {
    super(delegate);
  }

  public void failing(boolean on) {
    failing.set(on);
  }

  /**
   * Makes the {@code count} calls of {@code getConnection} after the next {@code skip} ones block
   * until {@link #unstall()} (at most a minute).
   */
  public void stall(int skip, int count) {
    synchronized (stallLock) {
      skipBeforeStall = skip;
      toStall = count;
      unstalled = new CountDownLatch(1);
    }
  }

  /** Lets every stalled call go on, and stalls no more. */
  public void unstall() {
    synchronized (stallLock) {
      toStall = 0;
      unstalled.countDown();
    }
  }

  /** How many calls have been stalled so far (including those still blocked). */
  public int stalled() {
    return stalledCalls.get();
  }

  private void maybeStall() throws SQLException {
    CountDownLatch latch;
    synchronized (stallLock) {
      if (toStall == 0) {
        return;
      }
      if (skipBeforeStall > 0) {
        skipBeforeStall--;
        return;
      }
      toStall--;
      latch = unstalled;
    }
    stalledCalls.incrementAndGet();
    try {
      if (!latch.await(60, TimeUnit.SECONDS)) {
        throw new SQLTransientConnectionException("stalled for a minute (test)", "08001");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SQLTransientConnectionException("interrupted while stalled (test)", "08001", e);
    }
  }

  /** How many connections were refused so far. */
  public int refused() {
    return refused.get();
  }

  @Override
  public Connection getConnection() throws SQLException {
    refuseWhileFailing();
    return target.getConnection();
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    refuseWhileFailing();
    return target.getConnection(username, password);
  }

  private void refuseWhileFailing() throws SQLException {
    maybeStall();
    if (failing.get()) {
      refused.incrementAndGet();
      throw new SQLTransientConnectionException(
          "connection refused (injected by the test)", "08001");
    }
  }
}
