package legacy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;

/**
 * A legacy application that knows nothing of leases (no import of this project): plain JDBC and
 * HikariCP. The agent tests run it in child JVMs, with and without {@code -javaagent}, and read
 * what it does from its stdout, one event per line.
 *
 * <pre>
 * java [-javaagent:...] -cp ... legacy.LegacyApp writer URL TABLE WRITER POOL
 *   POOL: plain (DriverManager) or hikari, dbcp2, tomcat, c3p0, agroal, ucp (see Pools)
 *   loops: BEGIN; SELECT (prints TX-OPEN seq); pause 300 ms; INSERT (WRITER, seq); COMMIT
 *   prints COMMITTED seq or REFUSED seq exception, then IDLE seq and pauses 300 ms
 *   stdin "hold": waits between two transactions (prints HELD seq) until stdin "go"
 *   stdin "slow-shutdown": adds a shutdown hook that prints SHUTDOWN-HOOK and waits for stdin
 *     "exit" (at most 30 s), as an application that drains its work at shutdown
 * java [-javaagent:...] -cp ... legacy.LegacyApp jobs URL TABLE WRITER
 *   stdin "trigger N": calls Jobs.nightly(N) on a new thread (prints JOB-RETURNED N ran=...
 *     interrupted=...: what it returned, and its thread's interrupt flag after the call)
 *   stdin "stubborn N": calls Jobs.stubborn(N) so (it ignores interrupts)
 *   stdin "release N": lets the running nightly(N) or stubborn(N) return
 * java [-javaagent:...] -cp ... legacy.LegacyApp isolated
 *   loads RoutingDataSource again in a loader that cannot see the agent (ISOLATED-LOADED)
 * java [-javaagent:...] -cp ... legacy.LegacyApp isolated-jobs
 *   the same with Jobs, the class of the methods= tests
 * java [-javaagent:...] -cp ... legacy.LegacyApp xa ... / vendor ...   (see XaAndVendor)
 * java [-javaagent:...] -cp ... legacy.LegacyApp first-query URL hikari|plain
 *   prints FIRST-QUERY uptime-ms after its first query, then exits
 * java [-javaagent:...] -cp ... legacy.LegacyApp connections URL hikari|routing-hikari|plain|POOL N
 *   gets N connections one after another, runs SELECT 1 on each (prints CONNECTION i class)
 * </pre>
 */
public final class LegacyApp {

  /** Released by stdin "exit": the end of the slow shutdown hook. */
  private static final CountDownLatch drained = new CountDownLatch(1);

  private LegacyApp() {}

  /** The application's own shutdown hook ("slow-shutdown"): runs beside the agent's. */
  private static void drain() {
    System.out.println("SHUTDOWN-HOOK");
    try {
      drained.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  public static void main(String[] args) throws Exception {
    System.out.println("STARTED");
    switch (args[0]) {
      case "writer":
        writer(args[1], args[2], args[3], args[4]);
        break;
      case "jobs":
        jobs(args[1], args[2], args[3]);
        break;
      case "xa":
        XaAndVendor.xa(args[1], args[2], args[3], Integer.parseInt(args[4]), args[5]);
        // stays up (its sessions stay countable) until its input ends
        while (System.in.read() >= 0) {
          // nothing: wait for the end of the input
        }
        System.exit(0);
        break;
      case "vendor":
        if (args[1].startsWith("jdbc:mysql:")) {
          XaAndVendor.vendorMysql(args[1]);
        } else {
          XaAndVendor.vendor(args[1]);
        }
        System.exit(0);
        break;
      case "xa-mysql":
        XaAndVendor.xaMysql(args[1], args[2], args[3], args[4]);
        System.exit(0);
        break;
      case "xa-loss":
        XaAndVendor.xaAcrossALoss(args[1], args[2], args[3], args[4]);
        System.exit(0);
        break;
      case "vendor-copy":
        XaAndVendor.vendorCopy(args[1], args[2], args[3]);
        System.exit(0);
        break;
      case "isolated-jobs":
        isolated(Jobs.class);
        break;
      case "isolated":
        isolated();
        System.exit(0);
        break;
      case "first-query":
        firstQuery(args[1], "hikari".equals(args[2]));
        break;
      case "connections":
        connections(args[1], args[2], Integer.parseInt(args[3]));
        break;
      default:
        throw new IllegalArgumentException(args[0]);
    }
  }

  public static DataSource hikari(String url) {
    HikariConfig cfg = new HikariConfig();
    cfg.setJdbcUrl(url);
    cfg.setMaximumPoolSize(2);
    cfg.setConnectionTimeout(5_000);
    cfg.setPoolName("legacy");
    return new HikariDataSource(cfg);
  }

  private static Connection plain(String url) throws SQLException {
    return DriverManager.getConnection(url);
  }

  /**
   * The paused step sits between the transaction's first statement and its write: a process stopped
   * there (kill -STOP) resumes with a transaction that began under its old lease and writes after
   * its successor claimed the lease, the case that fencing exists for.
   */
  private static void writer(String url, String table, String writer, String poolName)
      throws InterruptedException, SQLException {
    boolean pooled = !poolName.equals("plain");
    DataSource pool = pooled ? Pools.create(poolName, url) : null;
    // stdin "hold": stop between two transactions (prints HELD seq) until "go"
    Semaphore held = new Semaphore(0);
    AtomicBoolean holdRequested = new AtomicBoolean();
    Thread commands =
        new Thread(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                  if (line.trim().equals("hold")) {
                    holdRequested.set(true);
                  } else if (line.trim().equals("go")) {
                    holdRequested.set(false);
                    held.release();
                  } else if (line.trim().equals("slow-shutdown")) {
                    Runtime.getRuntime().addShutdownHook(new Thread(LegacyApp::drain, "drain"));
                    System.out.println("SLOW-SHUTDOWN");
                  } else if (line.trim().equals("exit")) {
                    drained.countDown();
                  }
                }
              } catch (java.io.IOException e) {
                // no more commands
              }
            },
            "commands");
    commands.setDaemon(true);
    commands.start();
    for (int seq = 1; ; seq++) {
      try (Connection c = pooled ? pool.getConnection() : plain(url)) {
        c.setAutoCommit(false);
        try {
          try (Statement s = c.createStatement();
              ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + table)) {
            rs.next();
          }
          System.out.println("TX-OPEN " + seq);
          Thread.sleep(300); // the application's own work inside its transaction
          try (PreparedStatement ps =
              c.prepareStatement("INSERT INTO " + table + " (writer, seq) VALUES (?, ?)")) {
            ps.setString(1, writer);
            ps.setInt(2, seq);
            ps.executeUpdate();
          }
          c.commit();
          System.out.println("COMMITTED " + seq);
        } catch (SQLException e) {
          System.out.println(
              "REFUSED " + seq + " " + e.getClass().getName() + ": " + firstLine(e.getMessage()));
          try {
            c.rollback();
          } catch (SQLException ignored) {
            // the connection may be gone (a server that ended the idle transaction)
          }
        }
      } catch (SQLException e) {
        System.out.println(
            "REFUSED " + seq + " " + e.getClass().getName() + ": " + firstLine(e.getMessage()));
      }
      System.out.println("IDLE " + seq);
      if (holdRequested.get()) {
        System.out.println("HELD " + seq); // between transactions: no connection, no lock
        held.acquire();
      }
      Thread.sleep(300);
    }
  }

  private static void jobs(String url, String table, String writer) throws Exception {
    Jobs jobs = new Jobs(url, table, writer);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      String[] cmd = line.trim().split(" ");
      int n = Integer.parseInt(cmd[1]);
      if (cmd[0].equals("trigger") || cmd[0].equals("stubborn")) {
        boolean stubborn = cmd[0].equals("stubborn");
        Thread t =
            new Thread(
                () -> {
                  boolean ran = stubborn ? jobs.stubborn(n) : jobs.nightly(n);
                  System.out.println(
                      "JOB-RETURNED "
                          + n
                          + " ran="
                          + ran
                          + " interrupted="
                          + Thread.currentThread().isInterrupted());
                },
                "trigger-" + n);
        t.start();
      } else if (cmd[0].equals("release")) {
        jobs.release(n);
      }
    }
  }

  private static void firstQuery(String url, boolean pooled) throws Exception {
    DataSource pool = pooled ? hikari(url) : null;
    try (Connection c = pooled ? pool.getConnection() : plain(url);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1")) {
      rs.next();
    }
    System.out.println("FIRST-QUERY " + ManagementFactory.getRuntimeMXBean().getUptime());
    System.exit(0);
  }

  private static void connections(String url, String pool, int n) throws Exception {
    DataSource ds =
        pool.equals("plain")
            ? null
            : pool.equals("hikari")
                ? hikari(url)
                : pool.equals("routing-hikari")
                    ? new RoutingDataSource(hikari(url))
                    : Pools.create(pool, url);
    connections(ds, url, n);
    System.exit(0);
  }

  /**
   * Gets {@code n} connections from {@code ds} (or DriverManager when null) and queries on each.
   */
  public static void connections(DataSource ds, String url, int n) throws SQLException {
    for (int i = 1; i <= n; i++) {
      try (Connection c = open(ds, url);
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT 1")) {
        rs.next();
        System.out.println("CONNECTION " + i + " " + c.getClass().getName());
      }
    }
  }

  /**
   * The application's own helper that gets a connection (from {@code ds}, or DriverManager when
   * null): what a misconfigured {@code pool-internals=legacy.LegacyApp#open} names.
   */
  static Connection open(DataSource ds, String url) throws SQLException {
    return ds != null ? ds.getConnection() : plain(url);
  }

  /**
   * Loads the application's own DataSource class a second time, in a class loader that cannot see
   * the agent (its parent is the platform loader), as an isolated plugin loader would.
   */
  private static void isolated() throws Exception {
    isolated(RoutingDataSource.class);
  }

  /** Loads {@code own} a second time, in a class loader that cannot see the agent. */
  private static void isolated(Class<?> own) throws Exception {
    java.net.URL classes = LegacyApp.class.getProtectionDomain().getCodeSource().getLocation();
    try (java.net.URLClassLoader isolated =
        new java.net.URLClassLoader(
            new java.net.URL[] {classes}, ClassLoader.getPlatformClassLoader())) {
      Class<?> c = Class.forName(own.getName(), true, isolated);
      System.out.println("ISOLATED-LOADED " + c.getName());
    }
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }
}
