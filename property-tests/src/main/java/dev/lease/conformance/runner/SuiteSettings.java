package dev.lease.conformance.runner;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import dev.lease.conformance.failover.FailoverHook;
import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * What the runner asked for, handed to {@link ConformanceSuite} through JUnit configuration
 * parameters (the launcher's way to pass settings to tests).
 */
final class SuiteSettings {

  static final String URL = "lease.conformance.url";
  static final String USER = "lease.conformance.user";
  static final String PASSWORD = "lease.conformance.password";
  static final String TABLE_PREFIX = "lease.conformance.tablePrefix";
  static final String SIZE = "lease.conformance.size";
  static final String SEED = "lease.conformance.seed";
  static final String ONLY = "lease.conformance.only";
  static final String CONTROLS = "lease.conformance.controls";
  static final String FAILOVER_COMMAND = "lease.conformance.failoverCommand";
  static final String FAILOVER_PREPARE = "lease.conformance.failoverPrepareCommand";
  static final String FAILOVER_STALL = "lease.conformance.failoverStallCommand";
  static final String FAILOVER_REPLICATION = "lease.conformance.failoverReplication";

  final Target target;
  final Size size;
  final long seed;
  final Set<String> only;
  final boolean controls;

  /** Fails the database over for the failover property; null without --failover-command. */
  final FailoverHook failover;

  /** What the pair promises, as declared: true sync, false async, null to read it. */
  final Boolean synchronous;

  SuiteSettings(
      Target target,
      Size size,
      long seed,
      Set<String> only,
      boolean controls,
      FailoverHook failover,
      Boolean synchronous) {
    this.target = target;
    this.size = size;
    this.seed = seed;
    this.only = only;
    this.controls = controls;
    this.failover = failover;
    this.synchronous = synchronous;
  }

  boolean selected(ConformanceProperty p) {
    return only.isEmpty() || only.contains(p.id());
  }

  /** A control runs when --only names it or its property (or --only is not given). */
  boolean selected(ConformanceProperty p, NegativeControl c) {
    return only.isEmpty() || only.contains(p.id()) || only.contains(c.id());
  }

  /** Resolves a {@link SuiteSettings} parameter from the configuration parameters. */
  static final class Resolver implements ParameterResolver {
    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
      return p.getParameter().getType() == SuiteSettings.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext e) {
      String url =
          e.getConfigurationParameter(URL)
              .orElseThrow(
                  () ->
                      new IllegalStateException(
                          "the conformance suite needs the configuration parameter "
                              + URL
                              + "; run it with java -jar lease-conformance.jar"));
      Target target =
          new Target(
              url,
              e.getConfigurationParameter(USER).orElse(null),
              e.getConfigurationParameter(PASSWORD).orElse(null),
              e.getConfigurationParameter(TABLE_PREFIX).orElse("lc_suite_"));
      Size size =
          Size.valueOf(e.getConfigurationParameter(SIZE).orElse("QUICK").toUpperCase(Locale.ROOT));
      long seed = Long.parseLong(e.getConfigurationParameter(SEED).orElse("1"));
      Set<String> only =
          e.getConfigurationParameter(ONLY)
              .map(
                  s ->
                      Arrays.stream(s.split(","))
                          .map(String::trim)
                          .filter(x -> !x.isEmpty())
                          .collect(Collectors.toSet()))
              .orElse(Set.of());
      boolean controls =
          Boolean.parseBoolean(e.getConfigurationParameter(CONTROLS).orElse("false"));
      FailoverHook failover =
          e.getConfigurationParameter(FAILOVER_COMMAND)
              .map(
                  cmd ->
                      FailoverHook.commands(
                          e.getConfigurationParameter(FAILOVER_PREPARE).orElse(null),
                          e.getConfigurationParameter(FAILOVER_STALL).orElse(null),
                          cmd))
              .orElse(null);
      Boolean synchronous =
          e.getConfigurationParameter(FAILOVER_REPLICATION).map("sync"::equals).orElse(null);
      return new SuiteSettings(target, size, seed, only, controls, failover, synchronous);
    }
  }
}
