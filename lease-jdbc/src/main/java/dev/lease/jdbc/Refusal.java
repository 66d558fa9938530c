package dev.lease.jdbc;

import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;

/**
 * How a lease that is no longer held stops a transaction (DESIGN-NOTE.md): the one mechanism of the
 * fence, as a strategy, so that tests can plug the previous, weaker one in beside it and show what
 * it lets through (negative controls). Production code only ever uses {@link #SERVER}.
 */
abstract class Refusal {

  /**
   * The database refuses: the verify raises an error in the server when the lease row does not
   * match, so nothing sent with it or after it runs; every commit under a lease carries its proof
   * (PostgreSQL: the verify rides in the COMMIT's round trip; elsewhere a verify before COMMIT when
   * the fence's picture of the transaction is in doubt); the server's own transaction state tells
   * when a verified transaction ended behind the fence.
   */
  static final Refusal SERVER =
      new Refusal("server") {
        @Override
        String verifySql(Lease lease, boolean strict) {
          return LeaseInternals.verifySql(lease, strict);
        }

        @Override
        String commitProofSql(Lease lease, boolean strict) {
          return LeaseInternals.commitProofSql(lease, strict);
        }

        @Override
        boolean commitCarriesProof() {
          return true;
        }

        @Override
        boolean readsServerState() {
          return true;
        }
      };

  /**
   * The mechanism before issue 25, for negative controls and comparisons only: the client reads the
   * verify's empty result after the round trip, and a commit trusts the fence's own picture.
   */
  static final Refusal CLIENT =
      new Refusal("client") {
        @Override
        String verifySql(Lease lease, boolean strict) {
          return LeaseInternals.clientCheckedVerifySql(lease, strict);
        }

        @Override
        String commitProofSql(Lease lease, boolean strict) {
          return verifySql(lease, strict);
        }

        @Override
        boolean commitCarriesProof() {
          return false;
        }

        @Override
        boolean readsServerState() {
          return false;
        }
      };

  private final String name;

  private Refusal(String name) {
    this.name = name;
  }

  /** The verify's text for {@code lease} (parameters: {@link LeaseInternals#verifyParameters}). */
  abstract String verifySql(Lease lease, boolean strict);

  /** The verify a commit carries (PostgreSQL: in the COMMIT's round trip). */
  abstract String commitProofSql(Lease lease, boolean strict);

  /** Whether a commit under a lease proves itself where the fence's picture may be wrong. */
  abstract boolean commitCarriesProof();

  /** Whether the driver's view of the server's transaction state can send a verify again. */
  abstract boolean readsServerState();

  @Override
  public String toString() {
    return name;
  }
}
