package legacy;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

/**
 * The legacy application's jobs. In methods mode the agent runs {@link #nightly} (and, where
 * configured, {@link #stubborn}) under a lease ({@code legacy.Jobs#nightly=...}); a skipped call
 * returns false, the default.
 */
public final class Jobs {

  private final String url;
  private final String table;
  private final String writer;
  private final Map<Integer, CountDownLatch> releases = new ConcurrentHashMap<>();

  Jobs(String url, String table, String writer) {
    this.url = url;
    this.table = table;
    this.writer = writer;
  }

  /**
   * Records the run (row seq {@code n}), then stays running until the test releases trigger {@code
   * n}. Interrupted, it stops as a well-behaved job does: it records its cleanup in one more
   * transaction (row seq {@code -n}; prints JOB-CLEANUP n COMMITTED or REFUSED) and returns.
   */
  public boolean nightly(int n) {
    if (!insert(n)) {
      return true;
    }
    System.out.println("JOB-STARTED " + n);
    try {
      latch(n).await();
      System.out.println("JOB-RELEASED " + n);
    } catch (InterruptedException e) {
      System.out.println("JOB-INTERRUPTED " + n);
      cleanup(n);
      Thread.currentThread().interrupt(); // as a job that keeps the flag for its caller
    }
    return true;
  }

  /** Like {@link #nightly}, but it ignores interrupts: only the test's release ends it. */
  public boolean stubborn(int n) {
    if (!insert(n)) {
      return true;
    }
    System.out.println("JOB-STARTED " + n);
    boolean interrupted = false;
    while (true) {
      try {
        latch(n).await();
        System.out.println("JOB-RELEASED " + n);
        return true;
      } catch (InterruptedException e) {
        if (!interrupted) {
          System.out.println("JOB-INTERRUPTED " + n + " (ignored)");
          interrupted = true;
        }
      }
    }
  }

  void release(int n) {
    latch(n).countDown();
  }

  private boolean insert(int seq) {
    try (Connection c = DriverManager.getConnection(url);
        PreparedStatement ps =
            c.prepareStatement("INSERT INTO " + table + " (writer, seq) VALUES (?, ?)")) {
      ps.setString(1, writer);
      ps.setInt(2, seq);
      ps.executeUpdate();
      return true;
    } catch (SQLException e) {
      System.out.println("JOB-FAILED " + seq + " " + e);
      return false;
    }
  }

  /** The cleanup of an interrupted run, in a transaction of its own. */
  private void cleanup(int n) {
    try (Connection c = DriverManager.getConnection(url)) {
      c.setAutoCommit(false);
      try (PreparedStatement ps =
          c.prepareStatement("INSERT INTO " + table + " (writer, seq) VALUES (?, ?)")) {
        ps.setString(1, writer);
        ps.setInt(2, -n);
        ps.executeUpdate();
        c.commit();
        System.out.println("JOB-CLEANUP " + n + " COMMITTED");
      } catch (SQLException e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      System.out.println(
          "JOB-CLEANUP " + n + " REFUSED " + e.getClass().getName() + ": " + e.getMessage());
    }
  }

  private CountDownLatch latch(int n) {
    return releases.computeIfAbsent(n, k -> new CountDownLatch(1));
  }
}
