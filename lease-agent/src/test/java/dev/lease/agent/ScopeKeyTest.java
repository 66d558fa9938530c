package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.io.PrintWriter;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.dynamic.loading.ClassLoadingStrategy;
import net.bytebuddy.matcher.ElementMatchers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code ConnectionFencing}'s entry points must be public (the advice is inlined into classes of
 * other packages), but code other than the agent's advice cannot switch fencing off for its thread
 * with them: without this JVM's key, bound into the advice at instrumentation, entering a physical
 * scope (or an advised call) does nothing, and the application's connection from a DataSource woven
 * as the agent weaves it still comes back fenced. No database.
 */
class ScopeKeyTest {

  private static final AtomicInteger NAMES = new AtomicInteger();
  private static final String FENCED = "fenced";

  /** A DataSource that hands out one connection. */
  public static class PlainDataSource implements DataSource {
    public final Connection raw =
        (Connection)
            Proxy.newProxyInstance(
                ScopeKeyTest.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                (p, m, a) -> m.getName().equals("toString") ? "raw" : null);

    @Override
    public Connection getConnection() {
      return raw;
    }

    @Override
    public Connection getConnection(String user, String password) {
      return raw;
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
    public Logger getParentLogger() {
      return null;
    }

    @Override
    public <T> T unwrap(Class<T> iface) {
      return null;
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }

  @BeforeEach
  void installFencer() {
    Connection fenced =
        (Connection)
            Proxy.newProxyInstance(
                ScopeKeyTest.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                (p, m, a) -> m.getName().equals("toString") ? FENCED : null);
    ConnectionFencing.install(c -> fenced, false);
  }

  /**
   * PlainDataSource with the connection advice of {@code kind} woven as the agent weaves it ({@code
   * DRIVER}: its connections are a driver's physical ones, as {@code Driver.connect}'s).
   */
  private static DataSource woven(int kind) throws Exception {
    Class<?> type =
        new ByteBuddy()
            .redefine(PlainDataSource.class)
            .name(ScopeKeyTest.class.getName() + "$Woven" + NAMES.incrementAndGet())
            .visit(
                new EveryDeclaredMethod(
                    ElementMatchers.named("getConnection"), Instrumenter.advice(kind)))
            .make()
            .load(
                ScopeKeyTest.class.getClassLoader(),
                ClassLoadingStrategy.UsingLookup.of(MethodHandles.lookup()))
            .getLoaded();
    return (DataSource) type.getDeclaredConstructor().newInstance();
  }

  private static Object raw(DataSource ds) throws Exception {
    return ds.getClass().getField("raw").get(ds);
  }

  @AfterEach
  void uninstall() {
    ConnectionFencing.install(null, true);
  }

  @Test
  void aPhysicalScopeEnteredWithoutTheKeyDoesNotUnfenceTheThread() throws Exception {
    DataSource driver = woven(ConnectionFencing.DRIVER);
    long forged = ConnectionFencing.key() + 1;
    ConnectionFencing.enterPhysicalScope("app#sneaky", false, forged);
    try {
      assertEquals(FENCED, driver.getConnection().toString());
    } finally {
      ConnectionFencing.exitPhysicalScope(false, forged);
    }
  }

  /** Negative control: with the key (as the woven advice has it) the scope unfences the thread. */
  @Test
  void withTheKeyThePhysicalScopeUnfencesTheThread() throws Exception {
    DataSource driver = woven(ConnectionFencing.DRIVER);
    ConnectionFencing.enterPhysicalScope("app#sneaky", false, ConnectionFencing.key());
    try {
      assertSame(raw(driver), driver.getConnection());
    } finally {
      ConnectionFencing.exitPhysicalScope(false, ConnectionFencing.key());
    }
  }

  @Test
  void anAdvisedCallEnteredWithoutTheKeyDoesNotUnfenceTheThread() throws Exception {
    DataSource ds = woven(ConnectionFencing.DATA_SOURCE);
    ConnectionFencing.Entry entry = ConnectionFencing.enter(ConnectionFencing.key() + 1);
    try {
      assertEquals(FENCED, ds.getConnection().toString());
    } finally {
      ConnectionFencing.exit(ConnectionFencing.DATA_SOURCE, entry, null, null);
    }
  }

  /** Negative control: entered with the key, the next hand-out is nested, and comes unfenced. */
  @Test
  void withTheKeyAnAdvisedCallEnteredByHandUnfencesTheThread() throws Exception {
    DataSource ds = woven(ConnectionFencing.DATA_SOURCE);
    ConnectionFencing.Entry entry = ConnectionFencing.enter(ConnectionFencing.key());
    try {
      assertSame(raw(ds), ds.getConnection());
    } finally {
      ConnectionFencing.exit(ConnectionFencing.DATA_SOURCE, entry, null, null);
    }
  }
}
