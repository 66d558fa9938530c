package dev.lease.conformance.runner;

import static org.junit.jupiter.api.Assertions.fail;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.Properties;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.failover.FailoverProperty;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The conformance suite as JUnit tests, one per property (or, with {@code --controls}, one per
 * negative control), run by the runner through the JUnit Platform Launcher (and by any JUnit 5 tool
 * given the configuration parameters of {@link SuiteSettings}). Results travel to the runner as
 * report entries: progress while a property runs, then its numbers. A property that fails fails its
 * test; an inconclusive one aborts it (it neither passed nor failed); a control that is not caught
 * fails its test.
 */
@ExtendWith(SuiteSettings.Resolver.class)
public class ConformanceSuite {

  @TestFactory
  Stream<DynamicTest> everyProperty(SuiteSettings settings, TestReporter reporter) {
    // The failover property runs only with the user's failover command: without it the runner
    // cannot fail the database over, and the property is left out (skipped), never passed.
    List<ConformanceProperty> properties = new ArrayList<>(Properties.all());
    if (settings.failover != null) {
      properties.add(new FailoverProperty(settings.failover, settings.synchronous));
    }
    if (settings.controls) {
      return properties.stream()
          .flatMap(
              p ->
                  p.controls().stream()
                      .filter(c -> settings.selected(p, c))
                      .map(
                          c ->
                              DynamicTest.dynamicTest(
                                  c.id(), () -> control(c, settings, reporter))));
    }
    return properties.stream()
        .filter(settings::selected)
        .map(p -> DynamicTest.dynamicTest(p.id(), () -> check(p, settings, reporter)));
  }

  private static PropertyResult run(
      ConformanceProperty p, SuiteSettings settings, TestReporter reporter) {
    ConformanceProperty.Progress progress =
        (schedules, faults) ->
            reporter.publishEntry(ResultEntries.progress(p.id(), schedules, faults));
    PropertyResult r = p.check(settings.target, settings.size, settings.seed, progress);
    reporter.publishEntry(ResultEntries.encode(r));
    return r;
  }

  private static void check(ConformanceProperty p, SuiteSettings settings, TestReporter reporter) {
    PropertyResult r = run(p, settings, reporter);
    switch (r.verdict()) {
      case FAILS -> fail(p.id() + " does not hold on " + r.database() + ":\n" + r.failure());
      case INCONCLUSIVE ->
          Assumptions.abort(
              p.id() + " on " + r.database() + " is inconclusive: too few " + r.missing());
      default -> {}
    }
  }

  private static void control(NegativeControl c, SuiteSettings settings, TestReporter reporter) {
    String why = c.whyNotOn(settings.target);
    if (why != null) {
      reporter.publishEntry(ResultEntries.notApplicable(c.id(), settings.target.label(), why));
      return;
    }
    PropertyResult r = run(c.broken(), settings, reporter);
    if (!NegativeControl.caught(r)) {
      fail(
          c.id()
              + " ("
              + c.breaks()
              + ") was not caught on "
              + r.database()
              + ": "
              + r.verdict()
              + ", counts "
              + r.counts());
    }
  }
}
