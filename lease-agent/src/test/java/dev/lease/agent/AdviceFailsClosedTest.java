package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.invoke.MethodHandles;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.XAConnection;
import javax.transaction.xa.XAResource;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.dynamic.loading.ClassLoadingStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The connection advice fails closed: whatever throws in the agent's exit path (here the real one:
 * an XA connection's handle, where {@code XaTracking} asks the XAConnection for its resource and
 * gets a {@link NoClassDefFoundError}, as a driver whose XA classes are missing gives), the
 * application gets a connection that refuses every statement, and the original is closed. The
 * advice is woven by ByteBuddy exactly as the agent weaves it ({@link Instrumenter#advice}), into a
 * class defined in this package. No database.
 */
class AdviceFailsClosedTest {

  private static final AtomicInteger NAMES = new AtomicInteger();

  /** A pool's XAConnection whose getXAResource fails with an Error. */
  public static class BrokenXaConnection implements legacy.QuietXaConnection {
    final AtomicBoolean closed = new AtomicBoolean();
    final Connection handle =
        (Connection)
            Proxy.newProxyInstance(
                AdviceFailsClosedTest.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                (p, m, a) -> {
                  if (m.getName().equals("close")) {
                    closed.set(true);
                    return null;
                  }
                  if (m.getName().equals("createStatement")) {
                    return null; // the unfenced driver would run it
                  }
                  return m.getName().equals("toString") ? "original" : null;
                });

    @Override
    public Connection getConnection() throws SQLException {
      return handle;
    }

    @Override
    public XAResource getXAResource() throws SQLException {
      throw new NoClassDefFoundError("javax/transaction/xa/Xid (a driver's XA classes missing)");
    }
  }

  /** The advice as the agent had it before: its exit body's throwable suppressed, fail open. */
  static final class FailOpenAdvice {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static ConnectionFencing.Entry enter(@ConnectionAdvice.Key long key) {
      return ConnectionFencing.enter(key);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(
        @ConnectionAdvice.Kind int kind,
        @Advice.Enter ConnectionFencing.Entry entry,
        @Advice.This(optional = true) Object self,
        @Advice.Return(readOnly = false) Connection connection) {
      connection = ConnectionFencing.exitUnguarded(kind, entry, self, connection);
    }
  }

  @AfterEach
  void uninstall() {
    ConnectionFencing.install(null, true);
  }

  /** BrokenXaConnection with {@code advice} woven into getConnection, as the agent weaves. */
  private static XAConnection woven(Advice advice) throws Exception {
    Class<?> type =
        new ByteBuddy()
            .redefine(BrokenXaConnection.class)
            .name(AdviceFailsClosedTest.class.getName() + "$Woven" + NAMES.incrementAndGet())
            .visit(
                new EveryDeclaredMethod(
                    net.bytebuddy.matcher.ElementMatchers.named("getConnection"), advice))
            .make()
            .load(
                AdviceFailsClosedTest.class.getClassLoader(),
                ClassLoadingStrategy.UsingLookup.of(MethodHandles.lookup()))
            .getLoaded();
    return (XAConnection) type.getDeclaredConstructor().newInstance();
  }

  private static void installFencer() {
    // a fencer that works: the failure is in the XA path before it
    ConnectionFencing.install(
        c ->
            (Connection)
                Proxy.newProxyInstance(
                    AdviceFailsClosedTest.class.getClassLoader(),
                    new Class<?>[] {Connection.class},
                    (p, m, a) -> m.getName().equals("toString") ? "fenced" : null),
        false);
  }

  @Test
  void aThrowableInTheExitPathHandsOutARefusingConnectionAndClosesTheOriginal() throws Exception {
    installFencer();
    XAConnection xa = woven(Instrumenter.advice(ConnectionFencing.POOLED));
    Connection got = xa.getConnection();
    Raw raw = rawOf(xa);
    assertNotSame(raw.handle, got, "the original unfenced connection was handed out");
    SQLException refused = assertThrows(SQLException.class, got::createStatement);
    assertEquals("55000", refused.getSQLState());
    assertTrue(refused.getMessage().contains("NoClassDefFoundError"), refused.getMessage());
    assertTrue(raw.closed.get(), "the original connection was not closed");
  }

  /** Negative control: with the exit body unguarded, the same check sees the original. */
  @Test
  void withTheExitBodyUnguardedTheOriginalUnfencedConnectionIsHandedOut() throws Exception {
    installFencer();
    XAConnection xa =
        woven(
            Advice.withCustomMapping()
                .bind(ConnectionAdvice.Kind.class, ConnectionFencing.POOLED)
                .bind(ConnectionAdvice.Key.class, ConnectionFencing.key())
                .to(FailOpenAdvice.class));
    assertSame(rawOf(xa).handle, xa.getConnection());
  }

  /** The woven class is a copy of BrokenXaConnection, not a subclass: its fields, read. */
  private record Raw(Connection handle, AtomicBoolean closed) {}

  private static Raw rawOf(XAConnection xa) throws Exception {
    return new Raw(
        (Connection) xa.getClass().getDeclaredField("handle").get(xa),
        (AtomicBoolean) xa.getClass().getDeclaredField("closed").get(xa));
  }
}
