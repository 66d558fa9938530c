package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.jdbc.internal.sql.SqlDialect;
import dev.lease.jdbc.internal.sql.SqlKind;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.SQLException;
import java.util.List;

/**
 * How a {@link TransactionFence} reads a statement under a lease: every statement of its text, by
 * the dialect's {@link SqlLexer} ({@link SqlSummary}), whatever call sends it (a text, a prepared
 * statement, a batch). What the fence takes the summary to say is its rules' ({@code
 * FenceRules.read}): the summary itself, or a weaker reading a negative control plugs in.
 */
final class StatementReader {

  private final TransactionFence f;

  /**
   * The lexer of this connection's database, once a statement needed it ({@link #lexer(Lease)}).
   */
  SqlLexer lexer;

  /** The driver's options were checked for silent reconnects and replays. */
  private boolean driverChecked;

  StatementReader(TransactionFence f) {
    this.f = f;
  }

  /** The lexer of this connection's database: the lease's, else the connection's metadata. */
  SqlLexer lexer(Lease lease) throws SQLException {
    if (lease != null && !driverChecked) {
      driverChecked = true;
      DriverSession.refuseSilentReplay(f.view.driverSession().silentReplay(), lease);
    }
    SqlLexer l = lexer;
    if (l == null) {
      String product =
          lease != null
              ? lease.manager().databaseProduct()
              : f.delegate.getMetaData().getDatabaseProductName();
      l = SqlLexer.of(SqlDialect.ofProduct(product));
      lexer = l;
    }
    return l;
  }

  SqlSummary summary(FencingStatement st, StatementSource source, String sql, SqlLexer lexer) {
    SqlSummary s;
    switch (source) {
      case TEXT:
        s = lexer.summarize(sql);
        break;
      case ROW_CHANGE:
        return SqlSummary.one(SqlKind.OTHER);
      default:
        s = st.summary(source, lexer);
    }
    return f.rules.read(s, text(st, source, sql), lexer);
  }

  /** The text a call sends: {@code sql} of {@code execute(String)}, else the statement's own. */
  static String text(FencingStatement st, StatementSource source, String sql) {
    return source == StatementSource.TEXT ? sql : st == null ? null : st.sql;
  }

  /** MySQL/MariaDB: the text is an {@code XA PREPARE}. */
  static boolean isXaPrepare(SqlLexer lexer, String text) {
    if (text == null) {
      return false;
    }
    List<String> w = Abandoning.words(lexer, text, 2);
    return w.size() >= 2 && w.get(0).equals("XA") && w.get(1).equals("PREPARE");
  }
}
