package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.internal.sql.SqlDialect;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The verify in the first statement's round trip (PostgreSQL; MySQL and MariaDB when the driver was
 * configured with {@code allowMultiQueries=true}): the first statement of a transaction begun with
 * {@code setAutoCommit(false)} is sent as {@code <verify>;<statement>} in one text, and its results
 * are presented as if it had run alone. The verify fails in the server when the lease is gone, and
 * both servers stop a text at its first failing statement, so the statement never runs ({@code
 * FenceRules.verifySql}). Part of {@link TransactionFence}, which decides when it applies ({@link
 * #piggybackable}).
 */
final class Piggyback {

  private static final Logger log = LoggerFactory.getLogger(FenceContext.LOGGER);

  private final FenceContext f;
  private final Verifier verifier;
  private final Losses losses;
  private final SessionView view;
  private final StatementReader reader;

  Piggyback(
      FenceContext f, Verifier verifier, Losses losses, SessionView view, StatementReader reader) {
    this.f = f;
    this.verifier = verifier;
    this.losses = losses;
    this.view = view;
    this.reader = reader;
  }

  /** First statements that carried the verify along and ran (tests count them). */
  int piggybacked;

  /**
   * True if a statement prepared now should remember its parameters: the option is on and a lease
   * of a PostgreSQL manager is bound, or of a MySQL/MariaDB one on a connection whose driver sends
   * texts of several statements and prepares on the client (with none bound nothing is asked of the
   * driver; a statement prepared before its lease was bound verifies separately).
   */
  boolean mayPiggyback() {
    if (!f.options.piggybackVerify()) {
      return false;
    }
    Lease lease = LeaseInternals.currentOrNull();
    if (lease == null) {
      return false;
    }
    String product = lease.manager().databaseProduct();
    if ("PostgreSQL".equals(product)) {
      return true;
    }
    if (SqlDialect.ofProduct(product) != SqlDialect.MYSQL) {
      return false;
    }
    MySqlDriverOptions o = driverOptions();
    return o.multiQueries() && !o.serverPrepares();
  }

  /** MySQL family: what the user's driver was configured with (read once per connection). */
  private MySqlDriverOptions driverOptions;

  MySqlDriverOptions driverOptions() {
    MySqlDriverOptions o = driverOptions;
    if (o == null) {
      o = MySqlDriverOptions.of(f.delegate);
      driverOptions = o;
    }
    return o;
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
  boolean piggybackable(
      Lease lease, StatementHandle st, StatementSource source, String sql, CallShape shape)
      throws SQLException {
    if (st == null
        || !f.options.piggybackVerify()
        || (source != StatementSource.TEXT && source != StatementSource.PREPARED)) {
      return false;
    }
    if (f.lexer.dialect == SqlDialect.MYSQL) {
      return mySqlPiggybackable(lease, st, source, StatementHandle.text(st, source, sql), shape);
    }
    if (f.lexer.dialect != SqlDialect.POSTGRESQL) {
      return false;
    }
    if (source == StatementSource.PREPARED && !st.canReplay()) {
      return false;
    }
    return st.driverStatement().getFetchSize() <= 0
        && !f.delegate.isReadOnly()
        && !verifier.readOnlyByDefault()
        && lease.isHeld();
  }

  /**
   * MySQL/MariaDB: whether this first statement can carry the verify. The driver must send a text
   * of several statements as one ({@code allowMultiQueries=true}, read from the driver's own
   * configuration: {@link MySqlDriverOptions}); the server runs its statements in order in the open
   * transaction and stops at the first that fails (sql_parse.cc, dispatch_command, COM_QUERY: the
   * next statement is parsed only {@code while (... found_semicolon != NULL && !thd->is_error())},
   * in MySQL and MariaDB alike), so a refusing verify leaves the statement unrun (both drivers then
   * report that error from {@code execute}; MySqlPiggybackVerifyTest shows a MyISAM write absent).
   * The lexer has read the user's text as one ordinary statement under every reading of the
   * server's settings (a text it cannot split for certain is refused before this), so the combined
   * text is the verify and that one statement. Not, besides what PostgreSQL excludes (a batch, a
   * callable statement, generated keys, parameters that cannot be set twice, a read-only
   * connection, a lease not held):
   *
   * <ul>
   *   <li>a fetch size, including Connector/J's streaming {@code Integer.MIN_VALUE}: a streamed or
   *       cursor-fetched result is read differently from a text of several results;
   *   <li>an updatable result set ({@code CONCUR_UPDATABLE}): not tried with a text of several
   *       results;
   *   <li>a query timeout or a row limit: MariaDB Connector/J prefixes the text with {@code SET
   *       STATEMENT max_statement_time=..., SQL_SELECT_LIMIT=... FOR} (Statement.escapeTimeout,
   *       3.5.8), which would bound the verify and not the statement;
   *   <li>a prepared statement with server-side prepare ({@code useServerPrepStmts=true}): the
   *       server cannot prepare two statements as one;
   *   <li>{@code executeQuery} of a text that is not a plain {@code SELECT} without {@code INTO},
   *       and {@code executeUpdate} of one that is not an {@code INSERT}, {@code UPDATE}, {@code
   *       DELETE} or {@code REPLACE} without {@code RETURNING} ({@link #resultsAsAlone}): the
   *       drivers answer a call of the wrong kind each their own way, Connector/J before sending;
   *   <li>STRICT, on a session not known to have its bounds ({@link SessionBounds#inPlace}: a new
   *       session, or one a borrower without a lease had since): the separate verify reads the
   *       session's own values and sets the bounds before the statement runs, and remembers the
   *       session's own for the next borrower without a lease. Carried along, they could be set in
   *       the same text only at the risk of losing the session's own values when the statement
   *       fails (Connector/J then throws from {@code execute} and the verify's row is never read);
   *   <li>a plain statement whose verify values need a backslash or quote as a literal (how a
   *       backslash reads depends on {@code NO_BACKSLASH_ESCAPES}); the library's own names have
   *       none.
   * </ul>
   */
  private boolean mySqlPiggybackable(
      Lease lease, StatementHandle st, StatementSource source, String text, CallShape shape)
      throws SQLException {
    if (!resultsAsAlone(text, shape)) {
      return false;
    }
    if (source == StatementSource.PREPARED && !st.canReplay()) {
      return false;
    }
    MySqlDriverOptions o = driverOptions();
    if (!o.multiQueries()
        || (source == StatementSource.PREPARED && o.serverPrepares())
        || !lease.isHeld()) {
      return false;
    }
    Statement d = st.driverStatement();
    if (d.getFetchSize() != 0
        || d.getResultSetConcurrency() != ResultSet.CONCUR_READ_ONLY
        || d.getQueryTimeout() != 0
        || d.getMaxRows() != 0
        || d.getLargeMaxRows() != 0
        || f.delegate.isReadOnly()) {
      return false;
    }
    Duration idle = verifier.idleBound(lease);
    if (f.strategy.locks()
        && !SessionBounds.inPlace(
            f.delegate,
            SessionBounds.seconds(verifier.lockWaitBound(lease).toMillis()),
            SessionBounds.seconds(idle.toMillis()))) {
      return false;
    }
    if (source == StatementSource.TEXT) {
      for (Object v : LeaseInternals.verifyParameters(lease, f.strategy.locks(), idle)) {
        if (v instanceof String && !plainLiteral((String) v)) {
          return false;
        }
      }
    }
    return true;
  }

  /**
   * MySQL/MariaDB: true if the call's kind matches what {@code text} certainly returns, so the
   * combined text's results are what the driver would hand out for the statement alone. Connector/J
   * refuses {@code executeQuery} of a statement without a result set and {@code executeUpdate} of
   * one with a result set before sending it (01S03, S1009); MariaDB Connector/J sends it, then
   * hands out an empty result set or throws (HY000). Which texts return a result set is read from
   * the first word only (a text opening with a comment or a parenthesis is not read): {@code
   * SELECT} always returns rows unless it has {@code INTO}; {@code INSERT}, {@code UPDATE}, {@code
   * DELETE} and {@code REPLACE} return a count unless they have {@code RETURNING}. Either word
   * anywhere in the text, even in a literal, rules it out. {@code execute} takes any text.
   */
  static boolean resultsAsAlone(String text, CallShape shape) {
    if (shape == CallShape.EXECUTE) {
      return true;
    }
    if (text == null) {
      return false;
    }
    int i = 0;
    int n = text.length();
    while (i < n && Character.isWhitespace(text.charAt(i))) {
      i++;
    }
    int j = i;
    while (j < n && Character.isLetter(text.charAt(j))) {
      j++;
    }
    if (j < n && !Character.isWhitespace(text.charAt(j))) {
      return false; // SELECT* or a comment right after the word: not read
    }
    String first = text.substring(i, j).toUpperCase(java.util.Locale.ROOT);
    String upper = text.toUpperCase(java.util.Locale.ROOT);
    switch (shape) {
      case QUERY:
        return first.equals("SELECT") && !upper.contains("INTO");
      case UPDATE:
      case LARGE_UPDATE:
        return (first.equals("INSERT")
                || first.equals("UPDATE")
                || first.equals("DELETE")
                || first.equals("REPLACE"))
            && !upper.contains("RETURNING");
      default:
        return false;
    }
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
      Lease lease, StatementHandle st, StatementSource source, String sql, CallShape shape)
      throws SQLException {
    Duration idle = verifier.idleBound(lease);
    String verifySql = f.rules.verifySql(lease, f.strategy.locks());
    List<Object> values = LeaseInternals.verifyParameters(lease, f.strategy.locks(), idle);
    boolean mySql = f.lexer.dialect == SqlDialect.MYSQL;
    // MySQL/MariaDB STRICT: the verify reads the session's bounds along, as the separate one does
    // (carried only where they are known to be in place: mySqlPiggybackable)
    long[] session = mySql && f.strategy.locks() ? new long[] {-1, -1} : null;
    FencedTransaction t = f.state.transaction(lease);
    Statement s;
    boolean held = false;
    boolean rows;
    try {
      if (source == StatementSource.TEXT) {
        s = st.driverStatement();
        t.running = s;
        String verify =
            mySql ? withMySqlLiterals(verifySql, values) : withLiterals(verifySql, values);
        rows = s.execute(verify + ";\n" + sql);
      } else {
        PreparedStatement ps = st.combined(verifySql, values.size());
        LeaseInternals.bindVerify(lease, ps, 1, f.strategy.locks(), idle);
        s = ps;
        st.resultsFrom(ps);
        t.running = ps;
        rows = ps.execute();
      }
      piggybacked++;
      if (rows) {
        try (ResultSet v = s.getResultSet()) {
          held = v.next();
          if (held && session != null) {
            LeaseInternals.dialect(lease.manager()).readSessionBounds(v, session);
          }
        }
      }
      rows = s.getMoreResults();
    } catch (SQLException e) {
      // the verify or the statement failed (PostgreSQL aborts the transaction either way, and
      // skips what was sent after the failure): the transaction stays unverified
      view.afterError();
      if (losses.refusedInServer(e)) {
        piggybacked++; // carried along: the server refused it and ran nothing after it
        throw losses.refusedByDatabase(lease, e);
      }
      if (f.state.poisoned()) {
        throw losses.poisonedException("its statement failed after the loss: " + e.getMessage(), e);
      }
      throw e;
    } finally {
      t.running = null;
    }
    if (!held && f.rules.readsPiggybackedVerify()) {
      // only a verify that returns no row instead of failing (a control's weakened FenceRules) gets
      // here: the
      // statement sent along has run
      drain(s);
      throw losses.refusedByDatabase(lease, null);
    }
    verifier.markVerified(lease);
    losses.notify(lease, l -> l.transactionVerified(lease));
    if (held && session != null && session[0] >= 0) {
      // known in place; if the verify read others, something reset them behind the fence since
      // (a driver's session reset, a SET by the user): this statement ran with those, the next
      // ones run with the bounds again
      verifier.applySessionBounds(lease, session, idle);
    }
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
      view.afterError();
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
   * MySQL/MariaDB: the verify's text with its parameters as literals, for a plain {@code
   * Statement}: numbers as digits, strings as {@code '...'} ({@link #mySqlPiggybackable} lets none
   * through that holds a quote or a backslash, so the literal reads the same whatever {@code
   * sql_mode} is).
   */
  static String withMySqlLiterals(String verifySql, List<Object> values) {
    return withLiterals(verifySql, values, Piggyback::mySqlLiteral);
  }

  private static String mySqlLiteral(String text) {
    if (!plainLiteral(text)) {
      throw new IllegalStateException("a verify value needs escaping: " + text);
    }
    return "'" + text + "'";
  }

  /** A string that reads the same as a MySQL {@code '...'} literal under every sql_mode. */
  static boolean plainLiteral(String s) {
    return s.indexOf('\'') < 0 && s.indexOf('\\') < 0;
  }

  /**
   * The verify's text with its parameters as literals, for a plain {@code Statement} (which has no
   * parameters): numbers as digits, strings (the lease name, validated by LeaseNames; the holder
   * and the timeout, made by the library) as {@code E''} literals with quotes and backslashes
   * escaped, which reads the same whatever {@code standard_conforming_strings} is. The verify's
   * text has no {@code ?} but its placeholders.
   */
  static String withLiterals(String verifySql, List<Object> values) {
    return withLiterals(verifySql, values, Piggyback::escapedLiteral);
  }

  private static String escapedLiteral(String text) {
    StringBuilder b = new StringBuilder(text.length() + 3).append("E'");
    for (int j = 0; j < text.length(); j++) {
      char x = text.charAt(j);
      if (x == '\\' || x == '\'') {
        b.append(x);
      }
      b.append(x);
    }
    return b.append('\'').toString();
  }

  /**
   * {@code verifySql} with each {@code ?} replaced by its value: numbers as digits, strings as
   * {@code literal} writes them.
   */
  private static String withLiterals(
      String verifySql, List<Object> values, UnaryOperator<String> literal) {
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
        b.append(literal.apply(String.valueOf(v)));
      }
    }
    if (next != values.size()) {
      throw new IllegalStateException("verify text and parameters differ: " + verifySql);
    }
    return b.toString();
  }
}
