package dev.lease.jdbc;

/**
 * Benchmarks only: fencing options with the mechanism before issue 25 ({@link Refusal#CLIENT}: the
 * client reads the verify's empty result, commits trust the fence's picture), so that one trial can
 * run it interleaved with today's. In the benchmarks' jar only, beside lease-jdbc's package.
 */
public final class PreviousMechanism {

  private PreviousMechanism() {}

  public static FencingOptions.Builder of(FencingOptions.Builder b) {
    return b.refusal(Refusal.CLIENT);
  }
}
