package dev.lease.conformance.text;

import dev.lease.conformance.Target;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The JDBC driver boundary under the fence: an unpooled DataSource on the target (MySQL and MariaDB
 * with {@code allowMultiQueries=true}, so texts of several statements run there as they do for
 * applications that turn it on) that counts the texts of the current script that reach the driver
 * (not lease-core's verify, nor the fence's own statements).
 */
final class DriverBoundary implements DataSource {

  private final Target target;
  private final String url;
  private final AtomicLong reached = new AtomicLong();
  private volatile java.util.Set<String> expected = java.util.Set.of();

  DriverBoundary(Target target) {
    this.target = target;
    String u = target.url();
    if (target.isMySqlFamily() && !u.toLowerCase().contains("allowmultiqueries")) {
      u += (u.contains("?") ? "&" : "?") + "allowMultiQueries=true";
    }
    this.url = u;
  }

  /** Script statements (or texts) that reached the driver so far. */
  long reached() {
    return reached.get();
  }

  /** The texts of the script about to run: its whole text and each statement. */
  void expect(Script script) {
    java.util.Set<String> texts = new java.util.HashSet<>();
    texts.add(script.text());
    for (ScriptStatement s : script.statements()) {
      texts.add(s.sql());
    }
    expected = texts;
  }

  @Override
  public Connection getConnection() throws SQLException {
    Properties p = new Properties();
    if (target.user() != null) {
      p.setProperty("user", target.user());
    }
    if (target.password() != null) {
      p.setProperty("password", target.password());
    }
    return counting(DriverManager.getConnection(url, p));
  }

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    return counting(DriverManager.getConnection(url, user, password));
  }

  private boolean isScript(String sql) {
    return sql != null && expected.contains(sql);
  }

  private Connection counting(Connection c) {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, m, args) -> {
              Object result = invoke(c, m, args);
              if (result instanceof PreparedStatement
                  && args != null
                  && args.length > 0
                  && isScript((String) args[0])) {
                return statement((PreparedStatement) result, true);
              }
              if (result instanceof Statement && !(result instanceof PreparedStatement)) {
                return statement((Statement) result, false);
              }
              return result;
            });
  }

  /** Counts execute calls: prepared ones always (their SQL is a script's), others by their text. */
  private Object statement(Statement s, boolean scriptPrepared) {
    Class<?> iface =
        s instanceof java.sql.CallableStatement
            ? java.sql.CallableStatement.class
            : s instanceof PreparedStatement ? PreparedStatement.class : Statement.class;
    boolean[] batched = {false};
    return Proxy.newProxyInstance(
        Statement.class.getClassLoader(),
        new Class<?>[] {iface},
        (proxy, m, args) -> {
          String name = m.getName();
          boolean text = args != null && args.length > 0 && args[0] instanceof String;
          if (name.equals("addBatch") && text && isScript((String) args[0])) {
            batched[0] = true;
          } else if (name.startsWith("execute")) {
            boolean batch = name.contains("Batch");
            if (batch
                ? batched[0] || scriptPrepared
                : text ? isScript((String) args[0]) : scriptPrepared) {
              reached.incrementAndGet();
            }
            if (batch) {
              batched[0] = false;
            }
          }
          return invoke(s, m, args);
        });
  }

  private static Object invoke(Object target, Method m, Object[] args) throws Throwable {
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {}

  @Override
  public void setLoginTimeout(int seconds) {}

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    throw new SQLException("not a wrapper");
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return false;
  }
}
