package legacy;

import com.mchange.v2.c3p0.C3P0ProxyConnection;
import com.mchange.v2.c3p0.ComboPooledDataSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.XAConnection;
import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;
import org.postgresql.PGConnection;
import org.postgresql.xa.PGXADataSource;

/**
 * The legacy application's XA and vendor-interface code (PostgreSQL): what a transaction manager
 * does with an XADataSource, and the casts legacy code makes for LISTEN/NOTIFY or COPY.
 *
 * <pre>
 * ... legacy.LegacyApp xa URL TABLE WRITER N APPNAME
 *   N two-phase transactions (start, INSERT through the XA connection's handle, end, prepare,
 *   commit), each on a new XAConnection that is closed after it; prints XA-COMMITTED i, or
 *   XA-REFUSED i exception (then rolled back), and XA-DONE; then waits for the end of its input
 * ... legacy.LegacyApp vendor URL
 *   casts DriverManager's connection to PGConnection, calls it in autocommit as the connection's
 *   first act and as a transaction's first act,
 *   directly and reflectively; the same through c3p0's raw-connection operation on a pooled
 *   handle; prints VENDOR-OK what or VENDOR-FAILED what exception, then VENDOR-DONE
 * ... legacy.LegacyApp vendor-copy URL TABLE WRITER   (see vendorCopy)
 * ... legacy.LegacyApp xa-loss URL TABLE WRITER APPNAME   (see xaAcrossALoss)
 * ... legacy.LegacyApp xa-mysql URL TABLE WRITER [unlinked-]one-phase|[unlinked-]two-phase
 *   (see xaMysql)
 * </pre>
 */
final class XaAndVendor {

  private XaAndVendor() {}

  static void xa(String url, String table, String writer, int n, String appName) throws Exception {
    PGXADataSource xads = new PGXADataSource();
    xads.setURL(url);
    xads.setApplicationName(appName);
    for (int i = 1; i <= n; i++) {
      Xid xid = new SimpleXid(writer + "-" + i + "-" + System.nanoTime());
      XAConnection xac;
      try {
        xac = xads.getXAConnection();
      } catch (SQLException | RuntimeException e) {
        System.out.println("XA-REFUSED " + i + " " + e);
        continue;
      }
      try {
        XAResource res = xac.getXAResource();
        res.start(xid, XAResource.TMNOFLAGS);
        boolean ok = false;
        try (Connection c = xac.getConnection();
            PreparedStatement ps =
                c.prepareStatement("INSERT INTO " + table + " (writer, seq) VALUES (?, ?)")) {
          ps.setString(1, writer);
          ps.setInt(2, i);
          ps.executeUpdate();
          ok = true;
        } catch (SQLException e) {
          System.out.println(
              "XA-REFUSED " + i + " " + e.getClass().getName() + ": " + e.getMessage());
        }
        if (ok) {
          res.end(xid, XAResource.TMSUCCESS);
          if (res.prepare(xid) == XAResource.XA_OK) {
            res.commit(xid, false);
          }
          System.out.println("XA-COMMITTED " + i);
        } else {
          res.end(xid, XAResource.TMFAIL);
          res.rollback(xid);
        }
      } catch (XAException | RuntimeException e) {
        System.out.println("XA-REFUSED " + i + " " + e);
      } finally {
        xac.close();
      }
    }
    System.out.println("XA-DONE");
  }

  /**
   * One XA transaction on MySQL/MariaDB (Connector/J's or MariaDB Connector/J's XADataSource, by
   * the URL; with PHASE unlinked-*, {@link SqlXaDataSource}, whose XAResource the agent cannot link
   * with the handle): start, INSERT (WRITER, 1) through the handle, end; then a one-phase commit,
   * or prepare, print XA-PREPARED, wait for a line on stdin, and commit. Prints XA-COMMITTED 1 or
   * XA-REFUSED 1 errorCode message, then XA-DONE.
   */
  static void xaMysql(String url, String table, String writer, String phase) throws Exception {
    boolean onePhase = phase.endsWith("one-phase");
    javax.sql.XADataSource xads;
    if (phase.startsWith("unlinked-")) {
      xads = new SqlXaDataSource(url);
    } else if (url.startsWith("jdbc:mariadb:")) {
      org.mariadb.jdbc.MariaDbDataSource m = new org.mariadb.jdbc.MariaDbDataSource();
      m.setUrl(url);
      xads = m;
    } else {
      com.mysql.cj.jdbc.MysqlXADataSource m = new com.mysql.cj.jdbc.MysqlXADataSource();
      m.setUrl(url);
      xads = m;
    }
    XAConnection xac = xads.getXAConnection();
    try {
      XAResource res = xac.getXAResource();
      Xid xid = new SimpleXid(writer + "-1-" + System.nanoTime());
      res.start(xid, XAResource.TMNOFLAGS);
      Connection c = xac.getConnection();
      try (PreparedStatement ps =
          c.prepareStatement("INSERT INTO " + table + " (writer, seq) VALUES (?, 1)")) {
        ps.setString(1, writer);
        ps.executeUpdate();
      }
      if (!(xads instanceof SqlXaDataSource)) {
        // SqlXaDataSource's handle is its physical connection: it stays open until the branch is
        // over, closed with the XAConnection
        c.close();
      }
      res.end(xid, XAResource.TMSUCCESS);
      reportEnd(
          () -> {
            if (onePhase) {
              res.commit(xid, true);
            } else {
              int vote = res.prepare(xid);
              System.out.println("XA-PREPARED");
              awaitGo();
              if (vote == XAResource.XA_OK) {
                res.commit(xid, false);
              }
            }
          });
    } finally {
      xac.close();
    }
    System.out.println("XA-DONE");
  }

  /**
   * One two-phase transaction whose lease may be lost between its INSERT and its end: start, INSERT
   * (WRITER, 1) through the handle, print XA-OPEN, wait for a line on stdin, then end, prepare and
   * commit as a transaction manager does; prints XA-COMMITTED 1, or XA-REFUSED 1 errorCode message
   * (prepare or commit failed), then XA-DONE.
   */
  static void xaAcrossALoss(String url, String table, String writer, String appName)
      throws Exception {
    PGXADataSource xads = new PGXADataSource();
    xads.setURL(url);
    xads.setApplicationName(appName);
    XAConnection xac = xads.getXAConnection();
    try {
      XAResource res = xac.getXAResource();
      Xid xid = new SimpleXid(writer + "-1-" + System.nanoTime());
      res.start(xid, XAResource.TMNOFLAGS);
      try (Connection c = xac.getConnection();
          PreparedStatement ps =
              c.prepareStatement("INSERT INTO " + table + " (writer, seq) VALUES (?, 1)")) {
        ps.setString(1, writer);
        ps.executeUpdate();
      }
      System.out.println("XA-OPEN 1");
      awaitGo();
      res.end(xid, XAResource.TMSUCCESS);
      reportEnd(
          () -> {
            if (res.prepare(xid) == XAResource.XA_OK) {
              res.commit(xid, false);
            }
          });
    } finally {
      xac.close();
    }
    System.out.println("XA-DONE");
  }

  static void vendor(String url) throws Exception {
    try (Connection c = DriverManager.getConnection(url)) {
      PGConnection pg;
      try {
        pg = (PGConnection) c;
        System.out.println("VENDOR-OK cast " + c.getClass().getName());
      } catch (ClassCastException e) {
        System.out.println("VENDOR-FAILED cast " + e);
        System.out.println("VENDOR-DONE");
        return;
      }
      try {
        pg.getNotifications(); // in autocommit, the connection's first act: checked before
        System.out.println("VENDOR-OK autocommit-call");
      } catch (SQLException e) {
        System.out.println(
            "VENDOR-FAILED autocommit-call " + e.getClass().getName() + ": " + e.getMessage());
      }
      c.setAutoCommit(false);
      try {
        pg.getNotifications(); // the transaction's first act: verified before the driver's
        System.out.println("VENDOR-OK call");
      } catch (SQLException e) {
        System.out.println("VENDOR-FAILED call " + e.getClass().getName() + ": " + e.getMessage());
      }
      c.rollback();
      try {
        Method m = c.getClass().getMethod("getBackendPID");
        System.out.println("VENDOR-OK reflective " + m.invoke(c));
      } catch (InvocationTargetException e) {
        System.out.println("VENDOR-FAILED reflective " + e.getCause());
      }
      c.rollback();
    }
    ComboPooledDataSource pool = new ComboPooledDataSource();
    pool.setJdbcUrl(url);
    pool.setMaxPoolSize(1);
    try (Connection c = pool.getConnection()) {
      C3P0ProxyConnection proxy = (C3P0ProxyConnection) c;
      c.setAutoCommit(false);
      try {
        Object pid =
            proxy.rawConnectionOperation(
                PGConnection.class.getMethod("getBackendPID"),
                C3P0ProxyConnection.RAW_CONNECTION,
                new Object[0]);
        System.out.println("VENDOR-OK pooled-reflective " + pid);
      } catch (SQLException e) {
        System.out.println(
            "VENDOR-FAILED pooled-reflective " + e.getClass().getName() + ": " + e.getMessage());
      }
      c.rollback();
    } catch (ClassCastException e) {
      System.out.println("VENDOR-FAILED pooled-cast " + e);
    } finally {
      pool.close();
    }
    System.out.println("VENDOR-DONE");
  }

  /**
   * COPY through {@code (PGConnection) c}, in autocommit mode: a write with no statement. Prints
   * VENDOR-READY, waits for a line on stdin, then copies one row (WRITER, 1) into TABLE and prints
   * VENDOR-OK copy or VENDOR-FAILED copy exception, then VENDOR-DONE.
   */
  static void vendorCopy(String url, String table, String writer) throws Exception {
    try (Connection c = DriverManager.getConnection(url)) {
      PGConnection pg = (PGConnection) c;
      System.out.println("VENDOR-READY");
      awaitGo();
      try {
        long rows =
            pg.getCopyAPI()
                .copyIn(
                    "COPY " + table + " (writer, seq) FROM STDIN WITH (FORMAT csv)",
                    new java.io.StringReader(writer + ",1\n"));
        System.out.println("VENDOR-OK copy " + rows);
      } catch (SQLException e) {
        System.out.println("VENDOR-FAILED copy " + e.getClass().getName() + ": " + e.getMessage());
      }
    }
    System.out.println("VENDOR-DONE");
  }

  /** MySQL Connector/J's public connection interface, as legacy code casts to it. */
  static void vendorMysql(String url) throws Exception {
    try (Connection c = DriverManager.getConnection(url)) {
      com.mysql.cj.jdbc.JdbcConnection j;
      try {
        j = (com.mysql.cj.jdbc.JdbcConnection) c;
        System.out.println("VENDOR-OK mysql-cast " + c.getClass().getName());
      } catch (ClassCastException e) {
        System.out.println("VENDOR-FAILED mysql-cast " + e);
        System.out.println("VENDOR-DONE");
        return;
      }
      try {
        // the driver's own statement, past the fence: refused
        java.sql.PreparedStatement raw = j.clientPrepareStatement("SELECT 1");
        System.out.println("VENDOR-OK mysql-raw-statement " + raw.getClass().getName());
        raw.close();
      } catch (SQLException e) {
        System.out.println(
            "VENDOR-FAILED mysql-raw-statement " + e.getClass().getName() + ": " + e.getMessage());
      }
      c.setAutoCommit(false);
      try {
        j.ping(); // the transaction's first act: verified before the driver's
        System.out.println("VENDOR-OK mysql-call");
      } catch (SQLException e) {
        System.out.println(
            "VENDOR-FAILED mysql-call " + e.getClass().getName() + ": " + e.getMessage());
      }
      c.rollback();
    }
    System.out.println("VENDOR-DONE");
  }

  /** Waits for the test's line on stdin (its "go"). */
  private static void awaitGo() throws java.io.IOException {
    new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8))
        .readLine();
  }

  /** How a branch ends: a transaction manager's prepare and commit. */
  @FunctionalInterface
  private interface BranchEnd {
    void run() throws XAException, java.io.IOException;
  }

  /** Runs {@code end}; prints XA-COMMITTED 1, or XA-REFUSED 1 errorCode message. */
  private static void reportEnd(BranchEnd end) throws java.io.IOException {
    try {
      end.run();
      System.out.println("XA-COMMITTED 1");
    } catch (XAException e) {
      System.out.println("XA-REFUSED 1 " + e.errorCode + " " + e.getMessage());
    }
  }
}
