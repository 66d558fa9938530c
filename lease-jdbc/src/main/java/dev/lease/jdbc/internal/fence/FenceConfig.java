package dev.lease.jdbc.internal.fence;

import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.internal.FenceRules;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * What a fence is built from: the user's {@link FencingOptions} and what {@code FencingOptions}
 * holds but does not publish: the rules of the fence's mechanisms ({@link FenceRules#PRODUCTION},
 * or a negative control's weakened ones), whether to log at ERROR that they are weakened, and where
 * a lost lease's running statement is cancelled (null: the shared cancel threads).
 *
 * <p>Only {@code FencedConnections} (which builds every fence, from the options) builds one with
 * rules other than {@link FenceRules#PRODUCTION}: weakened rules reach a fence through {@code
 * FenceInternals.rulesForTesting} alone, whose gate this constructor would otherwise bypass. The
 * caller is compared by name: the API above names this record, and this record does not name it
 * back (no circle, docs/code.md).
 */
public record FenceConfig(
    FencingOptions options, FenceRules rules, boolean weakened, Executor cancelExecutor) {

  /** The one class that builds a fence's config from the user's options. */
  private static final String BUILDER = "dev.lease.jdbc.FencedConnections";

  private static final StackWalker WALKER =
      StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE);

  /**
   * @throws IllegalStateException for rules other than the production ones, unless called by {@code
   *     FencedConnections}
   */
  public FenceConfig {
    Objects.requireNonNull(options, "options");
    Objects.requireNonNull(rules, "rules");
    if (rules != FenceRules.PRODUCTION && !WALKER.getCallerClass().getName().equals(BUILDER)) {
      throw new IllegalStateException(
          "a fence with rules other than FenceRules.PRODUCTION is built by FencedConnections only"
              + " (weakened rules: FenceInternals.rulesForTesting, in lease's own tests)");
    }
  }

  /** Where a lost lease's running statement is cancelled: off the thread that reported the loss. */
  @Override
  public Executor cancelExecutor() {
    return cancelExecutor != null ? cancelExecutor : CancelThreads.SHARED;
  }
}
