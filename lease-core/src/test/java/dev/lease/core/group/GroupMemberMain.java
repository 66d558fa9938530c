package dev.lease.core.group;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import javax.sql.DataSource;

/**
 * One member of a group in its own JVM, for {@link LeaseGroupAcrossProcessesTest}: passes on its
 * own thread, records every key it acquires (key, term, instance) in the acquisitions table, and
 * closes its group (handing every key over) and exits when its standard input closes.
 *
 * <p>Arguments: database label, JDBC URL (SQLite: the database file), lease table, acquisitions
 * table, key count, instance name.
 */
public final class GroupMemberMain {

  private GroupMemberMain() {}

  public static void main(String[] args) throws Exception {
    String label = args[0];
    HikariDataSource ds = TestDatabase.childPool(label, args[1], "member-" + args[5]);
    String table = args[2];
    String acquisitions = args[3];
    int keys = Integer.parseInt(args[4]);
    String instance = args[5];
    try (LeaseManager manager =
        LeaseManager.builder(ds)
            .table(table)
            .instance(instance)
            .timings(LeaseGroupAcrossProcessesTest.TIMINGS)
            .failurePolicy(FailurePolicy.logOnly())
            .build()) {
      LeaseGroup group = LeaseGroupAcrossProcessesTest.group(manager, keys, ds, acquisitions);
      group.start();
      while (System.in.read() >= 0) {
        // until the test closes our standard input
      }
      group.close();
    }
    ds.close();
  }

  static List<String> keys(int n) {
    return IntStream.range(0, n).mapToObj(i -> String.format("key-%04d", i)).toList();
  }

  static void record(DataSource ds, String acquisitions, String key, Lease lease) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO " + acquisitions + " (k, term, instance) VALUES (?, ?, ?)")) {
      ps.setString(1, key);
      ps.setLong(2, lease.term());
      ps.setString(3, lease.instance());
      ps.executeUpdate();
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      System.err.println("could not record " + key + " term " + lease.term() + ": " + e);
    }
  }

  static Duration pass() {
    return Duration.ofMillis(25);
  }
}
