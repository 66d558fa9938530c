package dev.lease.jdbc;

import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The verify in the first statement's round trip (PostgreSQL): the first statement of a transaction
 * begun with {@code setAutoCommit(false)} is sent as {@code <verify>;<statement>} in one text, and
 * its results are presented as if it had run alone. The verify fails in the server when the lease
 * is gone, so the statement never runs ({@link Refusal}). Part of {@link TransactionFence}, which
 * decides when it applies ({@link #piggybackable}).
 */
final class Piggyback {

  private static final Logger log = LoggerFactory.getLogger(TransactionFence.class);

  private final TransactionFence f;

  Piggyback(TransactionFence f) {
    this.f = f;
  }

  /** First statements that carried the verify along and ran (tests count them). */
  int piggybacked;

  /**
   * True if a statement prepared now should remember its parameters: the option is on and a lease
   * of a PostgreSQL manager is bound (with none bound nothing is asked of the driver; a statement
   * prepared before its lease was bound verifies separately).
   */
  boolean mayPiggyback() {
    if (!f.options.piggybackVerify()) {
      return false;
    }
    Lease lease = LeaseInternals.currentOrNull();
    return lease != null && "PostgreSQL".equals(lease.manager().databaseProduct());
  }

  /**
   * Whether this first statement of a transaction begun with {@code setAutoCommit(false)} can carry
   * the verify in its round trip. PostgreSQL only: pgjdbc sends a text of several statements as one
   * Parse/Bind/Execute per statement and a single Sync, and the server runs them in order in the
   * open transaction. Not: a batch, a callable statement, generated keys (pgjdbc would take the
   * verify's rows for the keys: PgStatement.executeInternal takes the first result), a fetch size
   * (a portal per statement; the cursor read is long anyway), a read-only transaction (FOR KEY
   * SHARE is refused there; the plain verify runs), parameters that cannot be set twice (streams,
   * LOBs), a lease not held (refused locally, nothing sent).
   */
  boolean piggybackable(Lease lease, FencingStatement st, StatementSource source)
      throws SQLException {
    if (st == null
        || f.lexer.dialect != SqlDialect.POSTGRESQL
        || !f.options.piggybackVerify()
        || (source != StatementSource.TEXT && source != StatementSource.PREPARED)) {
      return false;
    }
    if (source == StatementSource.PREPARED
        && !(st instanceof FencingPreparedStatement
            && ((FencingPreparedStatement) st).canReplay())) {
      return false;
    }
    return st.delegate.getFetchSize() <= 0
        && !f.delegate.isReadOnly()
        && !f.verifier.readOnlyByDefault()
        && lease.isHeld();
  }

  /**
   * Runs {@code <verify>; <statement>} as one text in one round trip; the verify's row is read here
   * and the statement's results are presented as if it had run alone. The verify runs first on the
   * server and takes its lock (STRICT) before the statement runs. No row: the transaction is
   * refused and poisoned exactly as after a separate verify; the statement's effect is in the
   * transaction and goes with its rollback, and nothing of it is handed to the caller.
   */
  @SuppressWarnings("unchecked")
  <T> T piggyback(
      Lease lease, FencingStatement st, StatementSource source, String sql, CallShape shape)
      throws SQLException {
    Duration idle = f.verifier.idleBound(lease);
    String verifySql = f.options.refusal().verifySql(lease, f.strict);
    List<Object> values = LeaseInternals.verifyParameters(lease, f.strict, idle);
    FencedTransaction t = f.transaction(lease);
    Statement s;
    boolean held = false;
    boolean rows;
    try {
      if (source == StatementSource.TEXT) {
        s = st.delegate;
        t.running = s;
        rows = s.execute(withLiterals(verifySql, values) + ";\n" + sql);
      } else {
        FencingPreparedStatement fps = (FencingPreparedStatement) st;
        PreparedStatement ps = fps.combined(verifySql, values.size());
        LeaseInternals.bindVerify(lease, ps, 1, f.strict, idle);
        s = ps;
        st.results = ps;
        t.running = ps;
        rows = ps.execute();
      }
      piggybacked++;
      if (rows) {
        try (ResultSet v = s.getResultSet()) {
          held = v.next();
        }
      }
      rows = s.getMoreResults();
    } catch (SQLException e) {
      // the verify or the statement failed (PostgreSQL aborts the transaction either way, and
      // skips what was sent after the failure): the transaction stays unverified
      f.afterError();
      if (f.losses.refusedInServer(e)) {
        piggybacked++; // carried along: the server refused it and ran nothing after it
        throw f.losses.refusedByDatabase(lease, e);
      }
      if (f.poisoned()) {
        throw f.losses.poisonedException(
            "its statement failed after the loss: " + e.getMessage(), e);
      }
      throw e;
    } finally {
      t.running = null;
    }
    if (!held && !f.options.weakened(Weakening.PIGGYBACK_IGNORES_REFUSAL)) {
      // only a verify that returns no row instead of failing (Refusal.CLIENT) gets here: the
      // statement sent along has run
      drain(s);
      throw f.losses.refusedByDatabase(lease, null);
    }
    f.verifier.markVerified(lease);
    f.losses.notify(lease, l -> l.transactionVerified(lease));
    try {
      switch (shape) {
        case QUERY:
          if (!rows) {
            throw new SQLException("No results were returned by the query.", "02000");
          }
          return (T) s.getResultSet();
        case UPDATE:
          if (rows) {
            throw new SQLException("A result was returned when none was expected.", "0100E");
          }
          return (T) Integer.valueOf(s.getUpdateCount());
        case LARGE_UPDATE:
          if (rows) {
            throw new SQLException("A result was returned when none was expected.", "0100E");
          }
          return (T) Long.valueOf(s.getLargeUpdateCount());
        default:
          return (T) Boolean.valueOf(rows);
      }
    } catch (SQLException e) {
      f.afterError();
      throw e;
    }
  }

  /** Nothing of a refused statement's results reaches the caller. */
  static void drain(Statement s) {
    try {
      while (s.getMoreResults() || s.getUpdateCount() != -1) {
        // discard
      }
    } catch (SQLException e) {
      log.debug("could not discard a refused statement's results", e);
    }
  }

  /**
   * The verify's text with its parameters as literals, for a plain {@code Statement} (which has no
   * parameters): numbers as digits, strings (the lease name, validated by LeaseNames; the holder
   * and the timeout, made by the library) as {@code E''} literals with quotes and backslashes
   * escaped, which reads the same whatever {@code standard_conforming_strings} is. The verify's
   * text has no {@code ?} but its placeholders.
   */
  static String withLiterals(String verifySql, List<Object> values) {
    StringBuilder b = new StringBuilder(verifySql.length() + 64);
    int next = 0;
    for (int i = 0; i < verifySql.length(); i++) {
      char c = verifySql.charAt(i);
      if (c != '?') {
        b.append(c);
        continue;
      }
      Object v = values.get(next++);
      if (v instanceof Number) {
        b.append(((Number) v).longValue());
      } else {
        String text = String.valueOf(v);
        b.append("E'");
        for (int j = 0; j < text.length(); j++) {
          char x = text.charAt(j);
          if (x == '\\' || x == '\'') {
            b.append(x);
          }
          b.append(x);
        }
        b.append('\'');
      }
    }
    if (next != values.size()) {
      throw new IllegalStateException("verify text and parameters differ: " + verifySql);
    }
    return b.toString();
  }
}
