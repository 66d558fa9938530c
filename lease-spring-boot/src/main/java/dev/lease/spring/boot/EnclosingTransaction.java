package dev.lease.spring.boot;

import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * A {@link Leased} call that runs inside a Spring-managed transaction begun by its caller: what the
 * method wrote commits only when that transaction commits, after the method returned. So the lease
 * must outlive the method. Released at the method's return, the commit came after the release: in
 * VERIFY mode it was refused (the lease was released since the verify), and on MySQL, MariaDB and
 * SQLite in STRICT mode the release itself waited for the caller's own verify lock until the
 * attempt timeout, then failed. The end of the call (unbinding the lease from the thread, giving it
 * back) therefore runs after the transaction completes, where Spring also gives back the
 * transaction's connection; until then the lease is renewed, and a loss poisons the transaction, so
 * its commit is refused.
 *
 * <p>Only loaded when spring-tx is present ({@code LeasedMethodInterceptor} asks); without it there
 * is no Spring-managed transaction to wait for.
 */
final class EnclosingTransaction {

  private EnclosingTransaction() {}

  /**
   * Runs {@code end} after the transaction open on this thread completes (committed or rolled
   * back), if one is: an actual transaction with synchronization, not a propagation scope
   * (SUPPORTS) that has none.
   *
   * @return true if {@code end} will run then; false if no transaction is open (run it now)
   */
  static boolean runAfterCompletion(Runnable end) {
    if (!TransactionSynchronizationManager.isSynchronizationActive()
        || !TransactionSynchronizationManager.isActualTransactionActive()) {
      return false;
    }
    TransactionSynchronizationManager.registerSynchronization(
        new TransactionSynchronization() {
          @Override
          public void afterCompletion(int status) {
            end.run();
          }
        });
    return true;
  }
}
