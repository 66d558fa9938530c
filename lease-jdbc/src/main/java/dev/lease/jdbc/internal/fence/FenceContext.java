package dev.lease.jdbc.internal.fence;

import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.internal.FenceRules;
import dev.lease.jdbc.internal.sql.SqlDialect;
import dev.lease.jdbc.internal.sql.SqlLexer;
import java.sql.Connection;
import java.util.concurrent.Executor;

/**
 * What one fence's collaborators share, below them all: the driver's connection, the options and
 * rules the fence was built with, the strategy of its mode, the transaction's state and the lexer
 * of the connection's database once known. The collaborators that talk to the database ({@link
 * Verifier}, {@link Piggyback}, {@link SessionView}, {@link StatementReader}) and {@link Losses}
 * get this and the collaborators below them, never the {@link TransactionFence} above them (issue
 * 39: imports point down).
 */
final class FenceContext {

  /** The logger every part of the fence logs under (one name for one mechanism). */
  static final String LOGGER = "dev.lease.jdbc.internal.fence.TransactionFence";

  final Connection delegate;
  final FencingOptions options;

  /**
   * The rules of the fence's mechanisms: {@link FenceRules#PRODUCTION}, or a negative control's
   * weakened ones (test sources only).
   */
  final FenceRules rules;

  /** Where a lost lease's running statement is cancelled: off the thread that reported the loss. */
  final Executor cancelExecutor;

  /**
   * What the fencing mode changes: {@link VerifyStrategy#STRICT} or {@link VerifyStrategy#VERIFY}.
   */
  final VerifyStrategy strategy;

  final TransactionState state;

  /**
   * The lexer of this connection's database, once a statement needed it ({@link
   * StatementReader#lexer}).
   */
  SqlLexer lexer;

  FenceContext(Connection delegate, FenceConfig config) {
    this.delegate = delegate;
    this.options = config.options();
    this.rules = config.rules();
    this.cancelExecutor = config.cancelExecutor();
    this.strategy = VerifyStrategy.of(options.mode());
    this.state = new TransactionState(rules);
  }

  boolean isMySql() {
    return lexer.dialect == SqlDialect.MYSQL;
  }
}
