package dev.lease.jdbc.internal.fence;

import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.internal.FenceRules;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * What a fence is built from: the user's {@link FencingOptions} and what {@code FencingOptions}
 * holds but does not publish: the rules of the fence's mechanisms ({@link FenceRules#PRODUCTION},
 * or a negative control's weakened ones), whether to log at ERROR that they are weakened, and where
 * a lost lease's running statement is cancelled.
 */
public record FenceConfig(
    FencingOptions options, FenceRules rules, boolean weakened, Executor cancelExecutor) {

  public FenceConfig {
    Objects.requireNonNull(options, "options");
    Objects.requireNonNull(rules, "rules");
    Objects.requireNonNull(cancelExecutor, "cancelExecutor");
  }

  /** Production: {@code options} with {@link FenceRules#PRODUCTION} and {@link CancelThreads}. */
  public static FenceConfig of(FencingOptions options) {
    return new FenceConfig(options, FenceRules.PRODUCTION, false, CancelThreads.SHARED);
  }
}
