package dev.lease.jdbc;

import dev.lease.jdbc.internal.FenceRules;
import dev.lease.jdbc.internal.fence.FenceConfig;
import java.util.concurrent.Executor;

/**
 * Tests only: what {@link FencingOptions} holds but does not publish (the fence's rules, its
 * cancels' executor), for the fence's tests in {@code dev.lease.jdbc.internal.fence}.
 */
public final class OptionsAccess {

  private OptionsAccess() {}

  /** What a fence built from {@code options} runs. */
  public static FenceConfig fence(FencingOptions options) {
    return FencedConnections.config(options);
  }

  /** The rules of {@code options}: {@link FenceRules#PRODUCTION} unless weakened. */
  public static FenceRules rules(FencingOptions options) {
    return options.rules();
  }

  /** {@code b} whose fences run the cancels of lost leases' statements on {@code executor}. */
  public static FencingOptions.Builder cancelExecutor(FencingOptions.Builder b, Executor executor) {
    return b.cancelExecutor(executor);
  }
}
