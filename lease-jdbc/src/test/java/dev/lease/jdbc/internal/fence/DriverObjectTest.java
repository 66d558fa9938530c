package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Blob;
import java.sql.CallableStatement;
import java.sql.Clob;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 25, items 1 and 2: a stale holder (its lease taken over; the successor's claim committed)
 * writes through a JDBC object it reached from a fenced connection: an array's result set, a
 * refcursor, a callable statement's cursor, a metadata result set, a large object. Nothing commits:
 * the object is one of the fence's wrappers, whose statements and writes pass the verify. Each
 * scenario's negative control writes through the driver's own object, which the wrapper handed out
 * before, and its write commits through the fenced {@code commit()} (or on its own in autocommit).
 */
class DriverObjectTest {

  /** A way to reach a statement from a fenced connection without running one under the lease. */
  enum Path {
    /** {@code createArrayOf(..).getResultSet().getStatement()} (pgjdbc: a fresh PgStatement). */
    CREATED_ARRAY,
    /** the same statement's {@code getConnection()}, then a statement of that connection. */
    CREATED_ARRAY_CONNECTION,
    /** {@code getArray} of a result read before the takeover. */
    RESULT_ARRAY,
    /** {@code getObject} of an array column, read before the takeover. */
    RESULT_ARRAY_OBJECT,
    /** {@code getObject} of a refcursor column (a driver result set), read before the takeover. */
    REFCURSOR,
    /**
     * a callable statement's refcursor OUT parameter, read before the takeover; its statement's
     * connection.
     */
    CALLABLE_REFCURSOR,
    /** a metadata result set's {@code getStatement().getConnection()}. */
    METADATA
  }

  static Stream<Arguments> postgresqlPaths() {
    List<Arguments> out = new ArrayList<>();
    for (Path p : Path.values()) {
      out.add(Arguments.of(TestDatabase.POSTGRESQL, p, true));
      out.add(Arguments.of(TestDatabase.POSTGRESQL, p, false));
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0} {1} autocommit={2}")
  @MethodSource("postgresqlPaths")
  void aStaleHoldersWriteThroughAReachedObjectDoesNotCommit(
      TestDatabase db, Path path, boolean autoCommit) throws Exception {
    assertEquals(0, writeThrough(db, path, autoCommit, false, Refusal.SERVER));
  }

  /** Negative control: the driver's own object (what the wrapper handed out before) commits. */
  @ParameterizedTest(name = "{0} {1} autocommit={2}")
  @MethodSource("postgresqlPaths")
  void negativeControlTheDriversOwnObjectCommitsTheStaleWrite(
      TestDatabase db, Path path, boolean autoCommit) throws Exception {
    assertEquals(1, writeThrough(db, path, autoCommit, true, Refusal.CLIENT));
  }

  /**
   * Issue 25's commit proof: even the driver's own object, which bypasses the wrapper, cannot get a
   * stale write committed through the fenced {@code commit()} (in autocommit mode its write commits
   * on its own: the wrapping above is what stops that).
   */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("postgresqlPaths")
  void theCommitsProofRefusesAWriteThroughTheDriversOwnObject(
      TestDatabase db, Path path, boolean autoCommit) throws Exception {
    if (!autoCommit) {
      assertEquals(0, writeThrough(db, path, false, true, Refusal.SERVER));
    }
  }

  /**
   * Rows the stale holder's write left: reaches a statement along {@code path} (the objects read in
   * a healthy transaction before the takeover), then inserts through it.
   *
   * @param driversOwn write through the driver's object under the wrapper instead
   */
  private static int writeThrough(
      TestDatabase db, Path path, boolean autoCommit, boolean driversOwn, Refusal refusal)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      String cursor = TestDatabase.uniqueTable("cur");
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "CREATE FUNCTION "
                + cursor
                + "() RETURNS refcursor AS $$ DECLARE r refcursor; BEGIN"
                + " OPEN r FOR SELECT 1 AS one; RETURN r; END $$ LANGUAGE plpgsql");
      }
      try {
        Lease lease = f.holding("obj");
        try (Connection c =
                f.fenced(WeakenedFence.refusal(f.options(), refusal).build()).getConnection();
            LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          Object reached = reach(c, path, cursor);
          if (driversOwn) {
            reached = driversOwn(reached);
          }
          f.takeOver(lease); // the successor's claim commits; the holder does not know yet
          c.setAutoCommit(autoCommit);
          try {
            Statement s = statementOf(reached, path);
            s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (99, 0)");
            if (!autoCommit) {
              c.commit();
            }
          } catch (LeaseLostSQLException e) {
            assertTrue(e.getMessage().contains(lease.name()), e.getMessage());
          } finally {
            if (!autoCommit) {
              c.rollback();
            }
          }
        }
        return f.count("id = 99");
      } finally {
        try (Connection c = f.pool.getConnection();
            Statement s = c.createStatement()) {
          s.execute("DROP FUNCTION IF EXISTS " + cursor + "()");
        }
      }
    }
  }

  /** The object {@code path} starts from, read in a healthy verified transaction. */
  private static Object reach(Connection c, Path path, String cursor) throws SQLException {
    switch (path) {
      case CREATED_ARRAY:
      case CREATED_ARRAY_CONNECTION:
        return c.createArrayOf("int4", new Integer[] {1, 2});
      case METADATA:
        return c.getMetaData().getTables(null, null, "%", null);
      default:
        break;
    }
    c.setAutoCommit(false);
    try (Statement s = c.createStatement()) {
      Object o;
      switch (path) {
        case RESULT_ARRAY:
          try (ResultSet rs = s.executeQuery("SELECT ARRAY[1, 2]")) {
            rs.next();
            o = rs.getArray(1);
          }
          break;
        case RESULT_ARRAY_OBJECT:
          try (ResultSet rs = s.executeQuery("SELECT ARRAY[1, 2]")) {
            rs.next();
            o = rs.getObject(1);
          }
          break;
        case REFCURSOR:
          try (ResultSet rs = s.executeQuery("SELECT " + cursor + "()")) {
            rs.next();
            o = rs.getObject(1);
          }
          break;
        default:
          try (CallableStatement cs = c.prepareCall("{? = call " + cursor + "()}")) {
            cs.registerOutParameter(1, Types.OTHER);
            cs.execute();
            o = cs.getObject(1);
          }
      }
      c.commit();
      return o;
    } finally {
      c.setAutoCommit(true);
    }
  }

  private static Statement statementOf(Object reached, Path path) throws SQLException {
    Statement s =
        reached instanceof Array
            ? ((Array) reached).getResultSet().getStatement()
            : ((ResultSet) reached).getStatement();
    // a callable's cursor belongs to the callable statement, pgjdbc's metadata to a prepared
    // one: they run no other text
    if (path == Path.CREATED_ARRAY_CONNECTION
        || path == Path.CALLABLE_REFCURSOR
        || path == Path.METADATA) {
      return s.getConnection().createStatement();
    }
    return s;
  }

  /** What the wrapper handed out before issue 25: the driver's object under ours. */
  static Object driversOwn(Object o) {
    if (o instanceof FencingResultSet) {
      return ((FencingResultSet) o).delegate;
    }
    assertTrue(o instanceof FencedObject, "a wrapper: " + o.getClass());
    return FencedObject.raw(o);
  }

  // ---- large objects (pgjdbc writes them through the fast-path API, no statement at all)

  enum LobWrite {
    BLOB_SET_BYTES,
    BLOB_STREAM,
    CLOB_TRUNCATE
  }

  static Stream<Arguments> postgresqlLobs() {
    return Stream.of(LobWrite.values()).map(w -> Arguments.of(TestDatabase.POSTGRESQL, w));
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("postgresqlLobs")
  void aStaleHoldersLargeObjectWriteDoesNotCommit(TestDatabase db, LobWrite write)
      throws Exception {
    assertEquals("abc", lobAfterStaleWrite(db, write, false));
  }

  /** Negative control: the driver's own large object changes under the stale lease. */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("postgresqlLobs")
  void negativeControlTheDriversOwnLargeObjectChanges(TestDatabase db, LobWrite write)
      throws Exception {
    assertFalse("abc".equals(lobAfterStaleWrite(db, write, true)));
  }

  /** The large object's content after the stale holder's write and fenced commit. */
  private static String lobAfterStaleWrite(TestDatabase db, LobWrite write, boolean driversOwn)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      String lobs = TestDatabase.uniqueTable("lo");
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE " + lobs + " (id INT PRIMARY KEY, b OID)");
        s.execute(
            "INSERT INTO " + lobs + " VALUES (1, lo_from_bytea(0, convert_to('abc', 'UTF8')))");
      }
      try {
        Lease lease = f.holding("lob");
        // the driver's own object: with the mechanism before issue 25 too (the commit's proof
        // would refuse its write at the fenced commit)
        FencingOptions.Builder o = f.options();
        try (Connection c =
                f.fenced(
                        (driversOwn ? WeakenedFence.weaken(o, WeakenedFence.PREVIOUS_REFUSAL) : o)
                            .build())
                    .getConnection();
            LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          c.setAutoCommit(false);
          Object lob;
          try (Statement s = c.createStatement();
              ResultSet rs = s.executeQuery("SELECT b FROM " + lobs)) {
            rs.next();
            lob = write == LobWrite.CLOB_TRUNCATE ? rs.getClob(1) : rs.getBlob(1);
          }
          c.commit();
          if (driversOwn) {
            lob = driversOwn(lob);
          }
          f.takeOver(lease);
          try {
            switch (write) {
              case BLOB_SET_BYTES:
                ((Blob) lob).setBytes(1, "X".getBytes(StandardCharsets.UTF_8));
                break;
              case BLOB_STREAM:
                try (OutputStream out = ((Blob) lob).setBinaryStream(1)) {
                  out.write('Y');
                }
                break;
              default:
                ((Clob) lob).truncate(1);
            }
            c.commit();
          } catch (LeaseLostSQLException e) {
            assertTrue(e.getMessage().contains(lease.name()), e.getMessage());
          } catch (IOException e) {
            assertTrue(e.getCause() instanceof LeaseLostSQLException, String.valueOf(e));
          } finally {
            c.rollback();
          }
        }
        try (Connection c = f.pool.getConnection();
            Statement s = c.createStatement();
            ResultSet rs = s.executeQuery("SELECT convert_from(lo_get(b), 'UTF8') FROM " + lobs)) {
          rs.next();
          return rs.getString(1);
        }
      } finally {
        try (Connection c = f.pool.getConnection();
            Statement s = c.createStatement()) {
          s.execute("SELECT lo_unlink(b) FROM " + lobs);
          s.execute("DROP TABLE " + lobs);
        }
      }
    }
  }

  // ---- every database: what a fenced connection hands out is a wrapper, back to the connection

  @OnEveryDatabase
  void reachedObjectsAreWrappersWhoseBackPointersLeadToTheFencedConnection(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 2);
        Connection c = f.fenced(f.options().build()).getConnection()) {
      int checked = 0;
      if (db.isMySqlFamily()) { // pgjdbc and sqlite-jdbc implement no createBlob
        Blob b = c.createBlob();
        assertTrue(b instanceof FencingBlob, b.getClass().getName());
        b.setBytes(1, new byte[] {1, 2});
        Clob cl = c.createClob();
        assertTrue(cl instanceof FencingClob, cl.getClass().getName());
        cl.setString(1, "ab");
        // our wrappers go back to the driver as its own objects
        try (java.sql.PreparedStatement ps =
            c.prepareStatement("SELECT ? IS NOT NULL, ? IS NOT NULL")) {
          ps.setBlob(1, b);
          ps.setClob(2, cl);
          try (ResultSet rs = ps.executeQuery()) {
            assertTrue(rs.next());
          }
        }
        checked += 2;
      }
      if (db == TestDatabase.POSTGRESQL) {
        Array a = c.createArrayOf("int4", new Integer[] {1, 2});
        assertTrue(a instanceof FencingArray);
        try (ResultSet rs = a.getResultSet()) {
          assertTrue(rs instanceof FencingResultSet);
          assertSame(c, rs.getStatement().getConnection());
        }
        try (Statement s = c.createStatement();
            ResultSet rs = s.executeQuery("SELECT ARRAY[ARRAY[1,2],ARRAY[3,4]], 'x'::xml")) {
          rs.next();
          Array nested = rs.getArray(1);
          assertTrue(nested instanceof FencingArray);
          assertTrue(rs.getObject(1) instanceof FencingArray);
          assertTrue(rs.getObject(1, Array.class) instanceof FencingArray);
          try (ResultSet inner = nested.getResultSet()) {
            inner.next();
            assertTrue(inner.getArray(2) instanceof FencingArray, "nested arrays are wrapped");
          }
          try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT ?::int[]")) {
            ps.setArray(1, a);
            try (ResultSet back = ps.executeQuery()) {
              back.next();
              assertEquals("{1,2}", back.getString(1));
            }
          }
        }
        checked += 3;
      }
      if (db.isSqlite()) {
        assertThrows(SQLException.class, c::createBlob, "sqlite-jdbc has no Blob");
      } else {
        assertTrue(checked > 0);
      }
    }
  }

  // ---- every server: our wrappers passed to a prepared statement reach the driver unwrapped

  @OnEveryServer
  void aPreparedStatementHandsTheDriverItsOwnObjectForOurWrapper(TestDatabase db) throws Exception {
    List<Object> sent = new CopyOnWriteArrayList<>();
    try (Fixture f = new Fixture(db, 2);
        Connection c =
            FencedDataSource.wrap(recordingParameters(f.pool, sent), f.options().build())
                .getConnection()) {
      List<Object> wrappers = new ArrayList<>();
      if (db.isMySqlFamily()) { // pgjdbc implements no createBlob
        Blob b = c.createBlob();
        b.setBytes(1, new byte[] {1, 2});
        Clob cl = c.createClob();
        cl.setString(1, "ab");
        wrappers.add(b);
        wrappers.add(cl);
        try (java.sql.PreparedStatement ps =
            c.prepareStatement("SELECT ? IS NOT NULL, ? IS NOT NULL")) {
          ps.setBlob(1, b);
          ps.setClob(2, cl);
          ps.executeQuery().close();
          ps.setObject(1, b);
          ps.setObject(2, cl);
          ps.executeQuery().close();
        }
      } else {
        Array a = c.createArrayOf("int4", new Integer[] {1, 2});
        wrappers.add(a);
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT ?::int[]")) {
          ps.setArray(1, a);
          ps.executeQuery().close();
          ps.setObject(1, a);
          try (ResultSet back = ps.executeQuery()) {
            back.next();
            assertEquals("{1,2}", back.getString(1));
          }
        }
      }
      for (Object w : wrappers) {
        assertTrue(w instanceof FencedObject, w.getClass().getName());
      }
      assertEquals(2 * wrappers.size(), sent.size(), sent.toString());
      for (Object v : sent) {
        assertFalse(
            v instanceof FencedObject, "the driver got our wrapper " + v.getClass().getName());
      }
    }
  }

  /**
   * The pool's connections with their prepared statements' parameter setters seen: every value the
   * driver is given (the second argument of {@code set*(int, value, ...)}) that is not a
   * primitive's box.
   */
  private static DataSource recordingParameters(DataSource pool, List<Object> sent) {
    InvocationHandler ds =
        (p, m, args) -> {
          Object r = forward(m, pool, args);
          return r instanceof Connection
              ? proxy(
                  Connection.class,
                  r,
                  (cp, cm, cargs) -> {
                    Object s = forward(cm, r, cargs);
                    return s instanceof java.sql.PreparedStatement
                        ? proxy(
                            java.sql.PreparedStatement.class,
                            s,
                            (sp, sm, sargs) -> {
                              if (sm.getName().startsWith("set")
                                  && sargs != null
                                  && sargs.length >= 2
                                  && sm.getParameterTypes()[0] == int.class
                                  && !sm.getParameterTypes()[1].isPrimitive()) {
                                sent.add(sargs[1]);
                              }
                              return forward(sm, s, sargs);
                            })
                        : s;
                  })
              : r;
        };
    return proxy(DataSource.class, pool, ds);
  }

  private static <T> T proxy(Class<T> type, Object target, InvocationHandler h) {
    return type.cast(
        Proxy.newProxyInstance(DriverObjectTest.class.getClassLoader(), new Class<?>[] {type}, h));
  }

  private static Object forward(Method m, Object target, Object[] args) throws Throwable {
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
