package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.jdbc.internal.sql.SqlDialect;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.SQLException;
import java.util.List;

/**
 * The lexer a fence reads statements with under a lease: the dialect's {@link SqlLexer}, which
 * reads every statement of a text ({@link SqlSummary}), whatever call sends it (a text, a prepared
 * statement, a batch); the driver's options are checked for silent replays before the first one.
 * The fence ({@code TransactionFence.summary}) asks the statement for its summary and takes it to
 * say what its rules say ({@code FenceRules.read}): the summary itself, or a weaker reading a
 * negative control plugs in.
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

  /** MySQL/MariaDB: the text is an {@code XA PREPARE}. */
  static boolean isXaPrepare(SqlLexer lexer, String text) {
    if (text == null) {
      return false;
    }
    List<String> w = Abandoning.words(lexer, text, 2);
    return w.size() >= 2 && w.get(0).equals("XA") && w.get(1).equals("PREPARE");
  }
}
