package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.OptionsAccess;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.lang.reflect.TypeVariable;
import java.sql.Array;
import java.sql.Blob;
import java.sql.CallableStatement;
import java.sql.Clob;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.NClob;
import java.sql.PreparedStatement;
import java.sql.Ref;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Struct;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Reflective completeness of "no raw driver object leaves the wrapper" (issue 25), in the spirit of
 * {@link WrapperTest}'s override check: every java.sql type reachable from a connection is either
 * wrapped or declared a value with no path to the database ({@link DriverObjects}), and every
 * method of every wrapper that returns something that could reach the database returns a wrapper. A
 * stub driver (dynamic proxies) returns a raw stub for every call, so a getter that forwards the
 * driver's object unchanged is caught; a JDBC version that adds a reachable type fails the first
 * test until the type is classified.
 */
class ReachableObjectsTest {

  /** Every java.sql interface reachable from Connection through return types, transitively. */
  static Set<Class<?>> reachableJdbcTypes() {
    Set<Class<?>> seen = new LinkedHashSet<>();
    Deque<Class<?>> todo = new ArrayDeque<>(List.of(Connection.class));
    while (!todo.isEmpty()) {
      Class<?> t = todo.pop();
      if (!seen.add(t)) {
        continue;
      }
      for (Method m : t.getMethods()) {
        for (Class<?> r :
            new Class<?>[] {m.getReturnType(), m.getReturnType().getComponentType()}) {
          if (r != null && r.isInterface() && r.getPackageName().equals("java.sql")) {
            todo.push(r);
          }
        }
      }
      for (Class<?> s : t.getInterfaces()) {
        if (s.getPackageName().equals("java.sql")) {
          todo.push(s);
        }
      }
    }
    return seen;
  }

  @Test
  void everyReachableJdbcTypeIsWrappedOrDeclaredAValue() {
    Set<String> unclassified = new TreeSet<>();
    for (Class<?> t : reachableJdbcTypes()) {
      if (!DriverObjects.WRAPPED.containsKey(t) && !DriverObjects.VALUES.containsKey(t)) {
        unclassified.add(t.getName());
      }
    }
    assertEquals(Set.of(), unclassified);
  }

  /** Negative control: the walk finds the types a connection really reaches, Array among them. */
  @Test
  void theWalkReachesArraysLobsAndResultSets() {
    Set<Class<?>> all = reachableJdbcTypes();
    for (Class<?> t : List.of(Array.class, Blob.class, NClob.class, Ref.class, ResultSet.class)) {
      assertTrue(all.contains(t), t.getName());
    }
  }

  @Test
  void everyMethodOfTheObjectWrappersIsOverridden() throws Exception {
    assertEquals(List.of(), WrapperTest.notOverridden(FencingArray.class, Array.class));
    assertEquals(List.of(), WrapperTest.notOverridden(FencingBlob.class, Blob.class));
    assertEquals(List.of(), WrapperTest.notOverridden(FencingClob.class, Clob.class));
    assertEquals(List.of(), WrapperTest.notOverridden(FencingClob.N.class, NClob.class));
    assertEquals(List.of(), WrapperTest.notOverridden(FencingRef.class, Ref.class));
    assertEquals(List.of(), WrapperTest.notOverridden(FencingStruct.class, Struct.class));
  }

  @Test
  void everyGetterOfEveryWrapperReturnsAWrapper() throws Exception {
    FencingConnection c =
        new FencingConnection(
            stub(Connection.class), OptionsAccess.fence(FencingOptions.defaults()));
    List<String> raw = new ArrayList<>();
    raw.addAll(rawReturns(c, Connection.class));
    raw.addAll(rawReturns(c.createStatement(), Statement.class));
    raw.addAll(rawReturns(c.prepareStatement("SELECT 1"), PreparedStatement.class));
    raw.addAll(rawReturns(c.prepareCall("CALL p()"), CallableStatement.class));
    raw.addAll(rawReturns(c.getMetaData(), DatabaseMetaData.class));
    raw.addAll(rawReturns(c.createStatement().executeQuery("SELECT 1"), ResultSet.class));
    raw.addAll(rawReturns(c.createArrayOf("int", new Object[0]), Array.class));
    raw.addAll(rawReturns(c.createBlob(), Blob.class));
    raw.addAll(rawReturns(c.createClob(), Clob.class));
    raw.addAll(rawReturns(c.createNClob(), NClob.class));
    raw.addAll(rawReturns(c.createStruct("t", new Object[0]), Struct.class));
    raw.addAll(rawReturns(c.object(stub(Ref.class)), Ref.class));
    assertEquals(List.of(), raw);
  }

  /**
   * Negative control: the generated result set with the hook that wrapped nothing (the wrapper
   * before issue 25) is caught.
   */
  @Test
  void theGetterCheckCatchesAForwardingWrapper() throws Exception {
    ResultSet forwarding =
        new ResultSetDelegate(stub(ResultSet.class)) {
          @Override
          boolean idle() {
            return true;
          }

          @Override
          java.sql.SQLException failed(java.sql.SQLException e) {
            return e;
          }

          @Override
          <T> T execute(StatementSource source, String sql, SqlCall<T> call)
              throws java.sql.SQLException {
            return call.call();
          }

          @Override
          Object object(Object value) {
            return value;
          }

          @Override
          <T> T object(T value, Class<T> type) {
            return value;
          }

          @Override
          public Statement getStatement() throws java.sql.SQLException {
            return delegate.getStatement();
          }

          @Override
          public void close() {}

          @Override
          public <T> T unwrap(Class<T> iface) {
            return null;
          }

          @Override
          public boolean isWrapperFor(Class<?> iface) {
            return false;
          }
        };
    List<String> raw = rawReturns(forwarding, ResultSet.class);
    assertTrue(raw.contains("ResultSet.getArray"), raw.toString());
    assertTrue(raw.contains("ResultSet.getObject"), raw.toString());
    assertTrue(raw.contains("ResultSet.getStatement"), raw.toString());
  }

  /** The methods of {@code iface} that hand out one of the stub driver's objects unwrapped. */
  static List<String> rawReturns(Object wrapper, Class<?> iface) throws Exception {
    assertFalse(isStub(wrapper), "not a wrapper: " + iface.getName());
    List<String> raw = new ArrayList<>();
    for (Method m : iface.getMethods()) {
      if (Modifier.isStatic(m.getModifiers())
          || !mayReach(m)
          || m.getName().equals("unwrap") // the unwrap policy: WrapperTest, VendorUnwrapTest
          || m.getName().equals("close")
          || m.getName().equals("abort")) {
        continue;
      }
      Object result;
      try {
        result = m.invoke(wrapper, arguments(m));
      } catch (InvocationTargetException e) {
        throw new AssertionError(iface.getSimpleName() + "." + m.getName(), e.getCause());
      }
      if (isStub(result)) {
        raw.add(iface.getSimpleName() + "." + m.getName());
      }
    }
    return raw;
  }

  /** A return type through which the database could be reached. */
  private static boolean mayReach(Method m) {
    Class<?> r = m.getReturnType();
    return m.getGenericReturnType() instanceof TypeVariable
        || r == Object.class
        || r == Object[].class
        || r == java.io.OutputStream.class
        || r == java.io.Writer.class
        || DriverObjects.WRAPPED.containsKey(r);
  }

  private static Object[] arguments(Method m) {
    Class<?>[] types = m.getParameterTypes();
    Object[] args = new Object[types.length];
    for (int i = 0; i < types.length; i++) {
      Class<?> t = types[i];
      if (t == int.class) {
        args[i] = 1;
      } else if (t == long.class) {
        args[i] = 1L;
      } else if (t == boolean.class) {
        args[i] = false;
      } else if (t == String.class) {
        args[i] = "x";
      } else if (t == Class.class) {
        args[i] = m.getReturnType() == Object.class ? Array.class : Object.class;
      } else if (t == String[].class) {
        args[i] = new String[] {"x"};
      } else if (t == int[].class) {
        args[i] = new int[] {1};
      } else if (t == Object[].class) {
        args[i] = new Object[0];
      } else if (t.isInterface() && t.getPackageName().equals("java.sql")) {
        args[i] = stub(t);
      }
    }
    return args;
  }

  private static boolean isStub(Object o) {
    if (o instanceof Object[]) {
      for (Object e : (Object[]) o) {
        if (isStub(e)) {
          return true;
        }
      }
      return false;
    }
    return o != null
        && (Proxy.isProxyClass(o.getClass()) || o instanceof StubStream || o instanceof StubWriter);
  }

  // ---- the stub driver: every call returns a fresh stub of its return type

  static <T> T stub(Class<T> type) {
    return type.cast(
        Proxy.newProxyInstance(
            ReachableObjectsTest.class.getClassLoader(), new Class<?>[] {type}, STUB));
  }

  private static final InvocationHandler STUB =
      (proxy, m, args) -> {
        Class<?> r = m.getReturnType();
        switch (m.getName()) {
          case "toString":
            return "stub " + proxy.getClass().getInterfaces()[0].getSimpleName();
          case "hashCode":
            return System.identityHashCode(proxy);
          case "equals":
            return proxy == args[0];
          case "getAutoCommit":
            return true;
          default:
            break;
        }
        if (m.getGenericReturnType() instanceof TypeVariable) {
          Class<?> want = (Class<?>) args[args.length - 1];
          return want.isInterface() ? stub(want) : null;
        }
        if (r == Object.class) {
          return stub(Array.class); // getObject: pgjdbc returns its Array for an array column
        }
        if (r == Object[].class) {
          return new Object[] {stub(Blob.class)};
        }
        if (r == java.io.OutputStream.class) {
          return new StubStream();
        }
        if (r == java.io.Writer.class) {
          return new StubWriter();
        }
        if (r.isInterface() && r.getPackageName().equals("java.sql")) {
          return stub(r);
        }
        if (r == boolean.class) {
          return false;
        }
        if (r == int.class) {
          return 0;
        }
        if (r == long.class) {
          return 0L;
        }
        if (r.isPrimitive() && r != void.class) {
          return r == double.class
              ? 0d
              : r == float.class
                  ? 0f
                  : r == short.class ? (short) 0 : r == byte.class ? (byte) 0 : null;
        }
        return null;
      };

  static final class StubStream extends java.io.OutputStream {
    @Override
    public void write(int b) {}
  }

  static final class StubWriter extends java.io.Writer {
    @Override
    public void write(char[] cbuf, int off, int len) {}

    @Override
    public void flush() {}

    @Override
    public void close() {}
  }
}
