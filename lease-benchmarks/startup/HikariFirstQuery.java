import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.lang.management.ManagementFactory;
import java.sql.*;
/** JVM uptime and loaded classes when the first query through HikariCP has returned. */
public class HikariFirstQuery {
  public static void main(String[] a) throws Exception {
    HikariConfig cfg = new HikariConfig();
    cfg.setJdbcUrl(a[0]);
    cfg.setMaximumPoolSize(2);
    try (HikariDataSource ds = new HikariDataSource(cfg);
        Connection c = ds.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT 1")) {
      rs.next();
      long up = ManagementFactory.getRuntimeMXBean().getUptime();
      int classes = ManagementFactory.getClassLoadingMXBean().getLoadedClassCount();
      System.out.println("uptime " + up + " ms, classes " + classes);
    }
  }
}
