package dev.lease.conformance.runner;

import static org.junit.jupiter.api.Assertions.fail;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.Properties;
import dev.lease.conformance.PropertyResult;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The conformance suite as JUnit tests, one per property, run by the runner through the JUnit
 * Platform Launcher (and by any JUnit 5 tool given the configuration parameters of {@link
 * SuiteSettings}). Results travel to the runner as report entries: progress while a property runs,
 * then its numbers.
 */
@ExtendWith(SuiteSettings.Resolver.class)
public class ConformanceSuite {

  @TestFactory
  Stream<DynamicTest> everyProperty(SuiteSettings settings, TestReporter reporter) {
    return Properties.all().stream()
        .filter(settings::selected)
        .map(p -> DynamicTest.dynamicTest(p.id(), () -> check(p, settings, reporter)));
  }

  private static void check(ConformanceProperty p, SuiteSettings settings, TestReporter reporter) {
    ConformanceProperty.Progress progress =
        (schedules, faults) ->
            reporter.publishEntry(ResultEntries.progress(p.id(), schedules, faults));
    PropertyResult r = p.check(settings.target, settings.size, settings.seed, progress);
    reporter.publishEntry(ResultEntries.encode(r));
    if (!r.holds()) {
      fail(p.id() + " does not hold on " + r.database() + ":\n" + r.failure());
    }
  }
}
