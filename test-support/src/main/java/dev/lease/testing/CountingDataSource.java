package dev.lease.testing;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * Counts what a client sends through a {@link DataSource}: every statement it executes (with its
 * text) and every connection call that reaches the server as a statement of its own on some driver
 * (commit, rollback, setting the isolation; setting auto-commit when it changes the mode). For the
 * tests that prove how many statements a lease step costs. Forwards everything; {@code unwrap}
 * reaches the real connection.
 */
public final class CountingDataSource extends ConnectionSource {

  private static final Set<String> EXECUTES =
      Set.of(
          "execute",
          "executeQuery",
          "executeUpdate",
          "executeLargeUpdate",
          "executeBatch",
          "executeLargeBatch");

  private final DataSource target;
  private final AtomicLong statements = new AtomicLong();
  private final AtomicLong otherCalls = new AtomicLong();
  private final List<String> texts = new CopyOnWriteArrayList<>();

  public CountingDataSource(DataSource target) {
    this.target = target;
  }

  /** Statements executed so far. */
  public long statements() {
    return statements.get();
  }

  /** Statements plus the connection calls that may cost a round trip each. */
  public long calls() {
    return statements.get() + otherCalls.get();
  }

  /** The texts of the statements executed so far (prepared ones at prepare time), in order. */
  public List<String> texts() {
    return List.copyOf(texts);
  }

  public void reset() {
    statements.set(0);
    otherCalls.set(0);
    texts.clear();
  }

  @Override
  public Connection getConnection() throws SQLException {
    Connection real = target.getConnection();
    return (Connection)
        Proxy.newProxyInstance(
            CountingDataSource.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            new ConnectionHandler(real));
  }

  private final class ConnectionHandler implements InvocationHandler {
    private final Connection real;

    ConnectionHandler(Connection real) {
      this.real = real;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      String name = method.getName();
      switch (name) {
        case "commit", "rollback", "setTransactionIsolation" -> otherCalls.incrementAndGet();
        case "setAutoCommit" -> {
          if (real.getAutoCommit() != (Boolean) args[0]) {
            otherCalls.incrementAndGet();
          }
        }
        default -> {}
      }
      Object result = forward(real, method, args);
      if (result instanceof Statement s) {
        String text = args != null && args.length > 0 && args[0] instanceof String t ? t : null;
        Class<?> type =
            s instanceof CallableStatement
                ? CallableStatement.class
                : s instanceof PreparedStatement ? PreparedStatement.class : Statement.class;
        return Proxy.newProxyInstance(
            CountingDataSource.class.getClassLoader(),
            new Class<?>[] {type},
            (p, m, a) -> {
              if (EXECUTES.contains(m.getName())) {
                statements.incrementAndGet();
                texts.add(a != null && a.length > 0 && a[0] instanceof String t ? t : text);
              }
              return forward(s, m, a);
            });
      }
      return result;
    }
  }

  private static Object forward(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
