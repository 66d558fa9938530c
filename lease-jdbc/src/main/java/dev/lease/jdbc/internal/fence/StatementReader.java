package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.jdbc.internal.sql.SqlDialect;
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

  private final FenceContext f;
  private final SessionView view;

  /** The driver's options were checked for silent reconnects and replays. */
  private boolean driverChecked;

  StatementReader(FenceContext f, SessionView view) {
    this.f = f;
    this.view = view;
  }

  /** The lexer of this connection's database: the lease's, else the connection's metadata. */
  SqlLexer lexer(Lease lease) throws SQLException {
    if (lease != null && !driverChecked) {
      driverChecked = true;
      DriverSession.refuseSilentReplay(view.driverSession().silentReplay(), lease);
    }
    SqlLexer l = f.lexer;
    if (l == null) {
      String product =
          lease != null
              ? lease.manager().databaseProduct()
              : f.delegate.getMetaData().getDatabaseProductName();
      l = SqlLexer.of(SqlDialect.ofProduct(product));
      f.lexer = l;
    }
    return l;
  }

  /** What the fence takes {@code summary} of {@code text} to say: the rules' reading of it. */
  SqlSummary read(SqlSummary summary, String text, SqlLexer lexer) {
    return f.rules.read(summary, text, lexer);
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
