import java.lang.management.ManagementFactory;
import java.sql.*;
import java.util.jar.*;
import java.util.*;
/** Loads every class of the jars named (without initialising them), as a large application's start does, then runs its first query. */
public class ManyClassesFirstQuery {
  public static void main(String[] a) throws Exception {
    int loaded = 0;
    for (int i = 1; i < a.length; i++) {
      try (JarFile jar = new JarFile(a[i])) {
        for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
          String n = e.nextElement().getName();
          if (n.endsWith(".class") && !n.contains("module-info") && !n.startsWith("META-INF")) {
            try { Class.forName(n.substring(0, n.length() - 6).replace('/', '.'), false, ManyClassesFirstQuery.class.getClassLoader()); loaded++; } catch (Throwable t) { }
          }
        }
      }
    }
    try (Connection c = DriverManager.getConnection(a[0]); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT 1")) { rs.next(); }
    System.out.println("uptime " + ManagementFactory.getRuntimeMXBean().getUptime() + " ms, classes " + ManagementFactory.getClassLoadingMXBean().getLoadedClassCount() + " (" + loaded + " from the jars)");
  }
}
