package legacy;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

/**
 * The legacy application's nightly job. In methods mode the agent runs {@link #nightly} under a
 * lease (configured as {@code legacy.Jobs#nightly=...}); a skipped call returns false, the default.
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

  /** Records the run, then stays running until the test releases trigger {@code n}. */
  public boolean nightly(int n) {
    try (Connection c = DriverManager.getConnection(url);
        PreparedStatement ps =
            c.prepareStatement("INSERT INTO " + table + " (writer, seq) VALUES (?, ?)")) {
      ps.setString(1, writer);
      ps.setInt(2, n);
      ps.executeUpdate();
    } catch (SQLException e) {
      System.out.println("JOB-FAILED " + n + " " + e);
      return true;
    }
    System.out.println("JOB-STARTED " + n);
    try {
      latch(n).await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return true;
  }

  void release(int n) {
    latch(n).countDown();
  }

  private CountDownLatch latch(int n) {
    return releases.computeIfAbsent(n, k -> new CountDownLatch(1));
  }
}
