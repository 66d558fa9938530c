package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.jdbc.FencingMode;

/**
 * What the {@link FencingMode} changes in the fence, named: {@link #STRICT} and {@link #VERIFY}.
 * Everything else (when the verify runs, the proof every commit carries, loss and poison) is the
 * same in both; DESIGN.md "Fencing modes".
 */
abstract class VerifyStrategy {

  /**
   * STRICT: the verify takes a share lock on the lease row ({@code FOR KEY SHARE}, {@code LOCK IN
   * SHARE MODE}, SQLite's write) and the transaction holds it until it ends. A successor's claim
   * updates that row, so it waits for this commit: the database orders the commit before the claim,
   * and a commit needs nothing beyond the checks every commit gets. XA PREPARE is refused on
   * MySQL/MariaDB, which release a transaction's shared locks there.
   */
  static final VerifyStrategy STRICT =
      new VerifyStrategy("STRICT", true) {
        @Override
        String refusesCommit(Lease verified) {
          // the verify's share lock on the lease row orders this commit before a successor's claim
          return null;
        }
      };

  /**
   * VERIFY: the verify is a plain read, and nothing in the database orders the commit before a
   * successor's claim; the margin between the local deadline and the row's expiry does. A release
   * sets the expiry to now, so the margin is gone at once: a commit after a release is refused. A
   * loss poisons the transaction through its loss listener. The local deadline is deliberately not
   * re-checked here: that would only narrow VERIFY's documented gap (a pause between the check and
   * the commit), not close it.
   */
  static final VerifyStrategy VERIFY =
      new VerifyStrategy("VERIFY", false) {
        @Override
        String refusesCommit(Lease verified) {
          return verified.isReleased()
              ? "it was released after this transaction was verified, and VERIFY mode"
                  + " cannot order this commit before a successor's claim"
              : null;
        }
      };

  static VerifyStrategy of(FencingMode mode) {
    return mode == FencingMode.STRICT ? STRICT : VERIFY;
  }

  private final String name;
  private final boolean locks;

  private VerifyStrategy(String name, boolean locks) {
    this.name = name;
    this.locks = locks;
  }

  /** Whether the verify takes the lease row's share lock and holds it to the commit. */
  final boolean locks() {
    return locks;
  }

  /** Whether MySQL/MariaDB {@code XA PREPARE} is refused: it would release the verify's lock. */
  final boolean refusesXaPrepare() {
    return locks;
  }

  /**
   * What this mode adds to the checks of a commit of a transaction verified under {@code verified}
   * (after the checks every commit gets: not poisoned, verified again if its lock may be gone, the
   * lease not lost): why the commit is refused, or null.
   */
  abstract String refusesCommit(Lease verified);

  @Override
  public String toString() {
    return name;
  }
}
