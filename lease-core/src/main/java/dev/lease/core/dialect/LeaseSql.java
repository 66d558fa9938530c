package dev.lease.core.dialect;

import dev.lease.core.dialect.Dialect.Held;
import dev.lease.core.dialect.Dialect.StepCall;
import dev.lease.core.internal.SqlRules;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;

/**
 * Binds and runs the lease statements, the same way on every database: the dialects hold the texts
 * and say which values go into them in which order; how a statement is prepared, bound, executed
 * and its result read is here, once. Also the session plumbing every dialect shares: a step's
 * commit, a rollback after a failure, putting a session back after an attempt.
 */
final class LeaseSql {

  private LeaseSql() {}

  /** One row of a result, read into one value. */
  @FunctionalInterface
  interface Row<T> {
    T read(ResultSet rs) throws SQLException;
  }

  /** A bigint parameter that may be SQL NULL. */
  record NullableLong(Long value) {}

  /**
   * The leases of a batch as {@link StandardDialect#heldMatch} takes them: every name (the primary
   * key's list), then the (name, holder, term) of each.
   */
  record HeldRows(List<Held> leases) {}

  /**
   * The leases of a batch as three array parameters (PostgreSQL's {@code unnest(?::varchar[],
   * ?::varchar[], ?::bigint[])}): the names, the holders, the terms.
   */
  record HeldArrays(List<Held> leases) {}

  /** Runs the update {@code sql} with {@code params} ({@link #bind}); the rows it counted. */
  static int update(Connection c, String sql, Object... params) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      bind(c, ps, 1, params);
      return ps.executeUpdate();
    }
  }

  /** {@link #update} of one row: true if it counted exactly one. */
  static boolean updateOne(Connection c, String sql, Object... params) throws SQLException {
    return update(c, sql, params) == 1;
  }

  /**
   * Runs the statement {@code sql} that returns rows (a SELECT, an UPDATE ... RETURNING) with
   * {@code params}; every row, read.
   */
  static <T> List<T> query(Connection c, String sql, Row<T> row, Object... params)
      throws SQLException {
    return read(c, sql, row, Integer.MAX_VALUE, params);
  }

  /** {@link #query} of at most one row: the first row read, or null when there is none. */
  static <T> T first(Connection c, String sql, Row<T> row, Object... params) throws SQLException {
    List<T> rows = read(c, sql, row, 1, params);
    return rows.isEmpty() ? null : rows.get(0);
  }

  /**
   * Runs {@code sql} with {@code params} ({@link Dialect#executeRead}) and reads at most {@code
   * max} rows; none when the statement returned no result set ({@code getResultSet()} is null for a
   * {@code SET STATEMENT ... FOR} text that answered with a count).
   */
  private static <T> List<T> read(Connection c, String sql, Row<T> row, int max, Object... params)
      throws SQLException {
    List<T> rows = new ArrayList<>(max == 1 ? 1 : 10);
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      bind(c, ps, 1, params);
      try (ResultSet rs = Dialect.executeRead(ps, sql)) {
        while (rs != null && rows.size() < max && rs.next()) {
          rows.add(row.read(rs));
        }
      }
    }
    return rows;
  }

  /**
   * Runs the one-row UPDATE {@code sql} that puts a term into its OK packet ({@code
   * LAST_INSERT_ID(...)}, MySQL and MariaDB): the term the driver hands out as the generated key,
   * or null when the UPDATE counted no row. {@code what} names the statement for the error (the
   * claim of the lease row 'a').
   */
  static Long generatedTerm(Connection c, String sql, String what, Object... params)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS)) {
      bind(c, ps, 1, params);
      if (ps.executeUpdate() != 1) {
        return null;
      }
      try (ResultSet keys = ps.getGeneratedKeys()) {
        if (!keys.next()) {
          throw new SQLException(what + " returned no term (LAST_INSERT_ID)");
        }
        return keys.getLong(1);
      }
    }
  }

  /**
   * Binds {@code params} in order from index {@code first}: a {@code String}, {@code Long} or
   * {@code Integer} to one parameter, a {@link NullableLong} to one (NULL when empty), a {@code
   * List} of names to one each, {@link HeldRows} and {@link HeldArrays} as they say. A null binds
   * SQL NULL as a string ({@code setString(i, null)}, as before {@code LeaseSql}); a number that
   * may be NULL is a {@link NullableLong}. Returns the next free index.
   */
  static int bind(Connection c, PreparedStatement ps, int first, Object... params)
      throws SQLException {
    int i = first;
    for (Object p : params) {
      if (p == null) {
        ps.setString(i++, null);
      } else if (p instanceof String v) {
        ps.setString(i++, v);
      } else if (p instanceof Long v) {
        ps.setLong(i++, v);
      } else if (p instanceof Integer v) {
        ps.setInt(i++, v);
      } else if (p instanceof NullableLong v) {
        if (v.value() == null) {
          ps.setNull(i++, Types.BIGINT);
        } else {
          ps.setLong(i++, v.value());
        }
      } else if (p instanceof List<?> names) {
        for (Object n : names) {
          ps.setString(i++, (String) n);
        }
      } else if (p instanceof HeldRows h) {
        for (Held l : h.leases()) {
          ps.setString(i++, l.name());
        }
        for (Held l : h.leases()) {
          ps.setString(i++, l.name());
          ps.setString(i++, l.holder());
          ps.setLong(i++, l.term());
        }
      } else if (p instanceof HeldArrays h) {
        int n = h.leases().size();
        String[] names = new String[n];
        String[] holders = new String[n];
        Long[] terms = new Long[n];
        for (int k = 0; k < n; k++) {
          Held l = h.leases().get(k);
          names[k] = l.name();
          holders[k] = l.holder();
          terms[k] = l.term();
        }
        ps.setArray(i++, c.createArrayOf("varchar", names));
        ps.setArray(i++, c.createArrayOf("varchar", holders));
        ps.setArray(i++, c.createArrayOf("bigint", terms));
      } else {
        throw new IllegalArgumentException("cannot bind " + p);
      }
    }
    return i;
  }

  /** Runs {@code sql} as a plain statement (session settings, PRAGMAs); nothing is bound. */
  static void executePlain(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /** Runs {@code sql} with {@code params} ({@link #bind}) for its effect (a bound SET). */
  static void execute(Connection c, String sql, Object... params) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      bind(c, ps, 1, params);
      ps.execute();
    }
  }

  /** Runs the update {@code sql} as a plain statement; the rows it counted. */
  static int updatePlain(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      return s.executeUpdate(sql);
    }
  }

  /** Runs the query {@code sql} as a plain statement: its first row, read, or null if none. */
  static <T> T firstPlain(Connection c, String sql, Row<T> row) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      return rs.next() ? row.read(rs) : null;
    }
  }

  /** The names of {@code leases}, in order. */
  static List<String> names(List<Held> leases) {
    List<String> names = new ArrayList<>(leases.size());
    for (Held h : leases) {
      names.add(h.name());
    }
    return names;
  }

  static Long nullableLong(ResultSet rs, int column) throws SQLException {
    long v = rs.getLong(column);
    return rs.wasNull() ? null : v;
  }

  static Held held(ResultSet rs) throws SQLException {
    return new Held(rs.getString(1), rs.getString(2), rs.getLong(3));
  }

  // ---- session plumbing ------------------------------------------------------------------------

  /**
   * Runs one lease step on {@code c}: the statement in autocommit, or followed by a commit when the
   * connection was handed out with autocommit off ({@link Dialect#inStep}).
   */
  static <T> T step(Connection c, long timeoutMs, StepCall<T> call) throws SQLException {
    if (c.getAutoCommit()) {
      return call.call(c, timeoutMs);
    }
    try {
      T result = call.call(c, timeoutMs);
      c.commit();
      return result;
    } catch (SQLException | RuntimeException | Error e) {
      rollbackQuietly(c, e);
      throw e;
    }
  }

  /** Rolls back after {@code cause}, keeping a rollback failure as suppressed on it. */
  static void rollbackQuietly(Connection c, Throwable cause) {
    try {
      c.rollback();
    } catch (SQLException r) {
      cause.addSuppressed(r);
    }
  }

  /** A step that puts a session setting back after an attempt. */
  @FunctionalInterface
  interface Restore {
    void run() throws SQLException;
  }

  /**
   * Puts a session back after an attempt, each step even if the one before failed. A step that
   * fails never hides the attempt's own error {@code failure} (it is added to it as suppressed):
   * when the connection broke, every restore fails too, and the caller must see why the attempt
   * failed, not that the connection was closed afterwards. With no {@code failure}, the first
   * failed step is thrown (the others suppressed on it); a broken connection is discarded by its
   * pool anyway.
   */
  static void restore(SqlRules rules, Throwable failure, Restore... steps) throws SQLException {
    SQLException first = null;
    for (Restore step : steps) {
      try {
        step.run();
      } catch (SQLException e) {
        rules.restoreStepFailed(e);
        if (failure != null) {
          failure.addSuppressed(e);
        } else if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }
}
