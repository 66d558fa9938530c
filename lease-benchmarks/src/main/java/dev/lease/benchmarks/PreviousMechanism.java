package dev.lease.benchmarks;

import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.internal.FenceInternals;
import dev.lease.jdbc.internal.FenceRules;

/**
 * Benchmarks only: fencing options with the refusal mechanism before issue 25 (the client reads the
 * verify's empty result, commits trust the fence's picture), so that one trial can run it
 * interleaved with today's. In the benchmarks' jar only: its rules are set through {@link
 * FenceInternals#rulesForComparison}, without the ERROR line a weakened fence logs for every
 * connection, which would time the log as well.
 */
public final class PreviousMechanism {

  private static final FenceRules CLIENT_REFUSAL =
      new FenceRules() {
        @Override
        public String verifySql(Lease lease, boolean strict) {
          return LeaseInternals.clientCheckedVerifySql(lease, strict);
        }

        @Override
        public String commitProofSql(Lease lease, boolean strict) {
          return verifySql(lease, strict);
        }

        @Override
        public boolean commitCarriesProof() {
          return false;
        }

        @Override
        public boolean readsServerTransactionState() {
          return false;
        }

        @Override
        public String toString() {
          return "client refusal";
        }
      };

  private PreviousMechanism() {}

  public static FencingOptions.Builder of(FencingOptions.Builder b) {
    return FenceInternals.rulesForComparison(b, CLIENT_REFUSAL);
  }

  private static final FenceRules EVERY_COMMIT_PROVES =
      new FenceRules() {
        @Override
        public boolean provesOnlyInDoubt() {
          return false;
        }

        @Override
        public String toString() {
          return "every commit proves";
        }
      };

  /**
   * Today's mechanism, but every STRICT commit on PostgreSQL carries the verify in its round trip,
   * as before issue 36 (the baseline of {@code FenceCost}).
   */
  public static FencingOptions.Builder everyCommitProves(FencingOptions.Builder b) {
    return FenceInternals.rulesForComparison(b, EVERY_COMMIT_PROVES);
  }
}
