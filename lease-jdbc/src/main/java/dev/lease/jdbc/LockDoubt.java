package dev.lease.jdbc;

/**
 * What the fence does when the verify's lock may be gone although the transaction goes on (a driver
 * error, a savepoint rollback, a MySQL batch or driver object that may have committed behind the
 * fence), as a strategy: {@link #VERIFY_AGAIN} in production ({@link
 * TransactionState#lockMayBeGone}). {@link #TRUST_THE_LOCK} is a negative control ({@link
 * Weakening#NO_REVERIFY}), chosen in {@link FencingOptions}.
 */
abstract class LockDoubt {

  /** The next statement and the commit verify again. */
  static final LockDoubt VERIFY_AGAIN =
      new LockDoubt("verify again") {
        @Override
        void lockMayBeGone(TransactionState state) {
          if (state.verified() != null) {
            state.reverify = true;
          }
        }
      };

  /** The verify's lock is trusted to the commit, whatever happened. */
  static final LockDoubt TRUST_THE_LOCK =
      new LockDoubt("trust the lock") {
        @Override
        void lockMayBeGone(TransactionState state) {}
      };

  private final String name;

  private LockDoubt(String name) {
    this.name = name;
  }

  abstract void lockMayBeGone(TransactionState state);

  @Override
  public String toString() {
    return name;
  }
}
