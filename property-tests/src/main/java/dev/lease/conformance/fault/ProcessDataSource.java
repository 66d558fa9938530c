package dev.lease.conformance.fault;

import dev.lease.core.internal.DataSourceAdapter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import javax.sql.DataSource;

/**
 * A process's way to the database in a fault run: while the process is "paused" (its threads
 * stopped, as in a long GC pause), it opens no new connection, so its keeper's renewals fail as
 * they would.
 */
final class ProcessDataSource extends DataSourceAdapter {

  private final DataSource delegate;
  private volatile long refuseUntilNanos = System.nanoTime();

  ProcessDataSource(DataSource delegate) {
    this.delegate = delegate;
  }

  void refuseFor(long millis) {
    refuseUntilNanos = System.nanoTime() + millis * 1_000_000L;
  }

  @Override
  public Connection getConnection() throws SQLException {
    if (System.nanoTime() - refuseUntilNanos < 0) {
      throw new SQLTransientConnectionException("process paused (injected fault)", "08001");
    }
    return delegate.getConnection();
  }
}
