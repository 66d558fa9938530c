import java.lang.management.ManagementFactory;
import java.sql.*;
/** JVM uptime and loaded classes when the first query through DriverManager has returned. */
public class FirstQuery {
  public static void main(String[] a) throws Exception {
    try (Connection c = DriverManager.getConnection(a[0]); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT 1")) {
      rs.next();
    }
    long up = ManagementFactory.getRuntimeMXBean().getUptime();
    int classes = ManagementFactory.getClassLoadingMXBean().getLoadedClassCount();
    System.out.println("uptime " + up + " ms, classes " + classes);
  }
}
