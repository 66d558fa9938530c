package dev.lease.conformance.runner;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.Properties;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Target;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.reporting.ReportEntry;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * The conformance runner, {@code java -jar lease-conformance.jar}: checks every property of the
 * suite (or, with {@code --controls}, every negative control) against one database through the
 * JUnit Platform Launcher, shows progress, and ends with a table of property × database × result,
 * the events each property counted, and the durations it measured. Exit status 0 only when every
 * property holds.
 */
public final class Main {

  static final int HOLDS = 0;
  static final int VIOLATED = 1;
  static final int BAD_INPUT = 2;
  static final int INCONCLUSIVE = 3;

  private Main() {}

  public static void main(String[] args) {
    System.exit(run(args, System.getenv(), System.out, System.err));
  }

  static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
    long started = System.nanoTime();
    Options options;
    try {
      options = Options.parse(args, env);
    } catch (IllegalArgumentException e) {
      err.println("lease-conformance: " + e.getMessage() + "\n\n" + Options.USAGE);
      return BAD_INPUT;
    }
    if (options.help()) {
      out.println(Options.USAGE);
      return HOLDS;
    }
    Path tempDir = null;
    String url = options.url();
    if (url == null) {
      try {
        tempDir = Files.createTempDirectory("lease-conformance-");
      } catch (IOException e) {
        err.println(
            "lease-conformance: cannot create a temporary directory for the embedded SQLite"
                + " database: "
                + e.getMessage()
                + "; set java.io.tmpdir to a writable directory");
        return BAD_INPUT;
      }
      // WAL, as most applications run SQLite: readers and one writer overlap
      url =
          "jdbc:sqlite:"
              + tempDir.resolve("conformance.db")
              + "?journal_mode=WAL&busy_timeout=5000";
    }
    Target target = new Target(url, options.user(), options.password());
    try {
      Preflight.check(target);
      long seed = options.seed() != null ? options.seed() : new SecureRandom().nextLong();
      out.println(
          "lease conformance"
              + (options.controls() ? " (negative controls)" : "")
              + ": "
              + target
              + ", "
              + options.size().name().toLowerCase()
              + " size, seed "
              + seed
              + (tempDir != null ? " (embedded SQLite in " + tempDir + ")" : "")
              + ", tables "
              + target.tablePrefix()
              + "* (dropped at the end)");
      List<Row> rows = launch(target, options, seed, out);
      int status = options.controls() ? controlsTable(rows, out) : propertiesTable(rows, out);
      out.println(durations(rows, started));
      if (options.controls()) {
        out.println(
            status == HOLDS
                ? "\nevery control was caught (seed " + seed + ")"
                : "\nNOT every control was caught; replay with --controls --seed " + seed);
      } else if (status == HOLDS) {
        out.println("\nevery property holds (seed " + seed + ")");
      } else if (status == INCONCLUSIVE) {
        out.println(
            "\nINCONCLUSIVE: no property failed, but not every property observed the events it must"
                + " observe to count as a test (see its counts); run again, or with --full (seed "
                + seed
                + ")");
      } else {
        out.println("\nNOT every property holds; replay with --seed " + seed);
      }
      return status;
    } catch (Preflight.BadInput e) {
      err.println("lease-conformance: " + e.getMessage());
      return BAD_INPUT;
    } finally {
      Preflight.sweep(target);
      if (tempDir != null) {
        deleteRecursively(tempDir);
      }
    }
  }

  /** One line of the final table. */
  static final class Row {
    final String id;
    String database;
    PropertyResult result;
    String error;
    String notApplicable;

    Row(String id, String database) {
      this.id = id;
      this.database = database;
    }

    PropertyResult.Verdict verdict() {
      if (error != null || result == null) {
        return PropertyResult.Verdict.FAILS;
      }
      return result.verdict();
    }
  }

  private static List<Row> launch(Target target, Options options, long seed, PrintStream out) {
    LauncherDiscoveryRequestBuilder request =
        LauncherDiscoveryRequestBuilder.request()
            .selectors(selectClass(ConformanceSuite.class))
            .configurationParameter(SuiteSettings.URL, target.url())
            .configurationParameter(SuiteSettings.TABLE_PREFIX, target.tablePrefix())
            .configurationParameter(SuiteSettings.SIZE, options.size().name())
            .configurationParameter(SuiteSettings.SEED, Long.toString(seed))
            .configurationParameter(SuiteSettings.CONTROLS, Boolean.toString(options.controls()))
            // the suite is this jar's own; nothing else on the class path is a conformance test
            .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "false");
    if (target.user() != null) {
      request.configurationParameter(SuiteSettings.USER, target.user());
    }
    if (target.password() != null) {
      request.configurationParameter(SuiteSettings.PASSWORD, target.password());
    }
    if (options.only() != null) {
      request.configurationParameter(SuiteSettings.ONLY, options.only());
    }
    if (options.failoverCommand() != null) {
      request.configurationParameter(SuiteSettings.FAILOVER_COMMAND, options.failoverCommand());
      if (options.failoverPrepare() != null) {
        request.configurationParameter(SuiteSettings.FAILOVER_PREPARE, options.failoverPrepare());
      }
      if (options.failoverStall() != null) {
        request.configurationParameter(SuiteSettings.FAILOVER_STALL, options.failoverStall());
      }
    }
    LauncherDiscoveryRequest discovery = request.build();
    List<Row> rows = new ArrayList<>();
    Progress progress = new Progress(out, rows, target);
    Launcher launcher = LauncherFactory.create();
    launcher.execute(discovery, progress);
    return rows;
  }

  /** What a row is about, in one sentence: the property's summary or what the control breaks. */
  private static String describe(String id) {
    for (ConformanceProperty p : Properties.all()) {
      if (p.id().equals(id)) {
        return p.summary();
      }
      for (NegativeControl c : p.controls()) {
        if (c.id().equals(id)) {
          return "negative control, must be caught: " + c.breaks();
        }
      }
    }
    return "";
  }

  /** Shows progress while the suite runs and collects the rows of the table. */
  private static final class Progress implements TestExecutionListener {
    private final PrintStream out;
    private final List<Row> rows;
    private final Target target;
    private long lastPrint;

    Progress(PrintStream out, List<Row> rows, Target target) {
      this.out = out;
      this.rows = rows;
      this.target = target;
    }

    @Override
    public void executionStarted(TestIdentifier id) {
      if (id.isTest()) {
        out.println("\n[" + id.getDisplayName() + "] " + describe(id.getDisplayName()));
        rows.add(new Row(id.getDisplayName(), target.label()));
        lastPrint = System.nanoTime();
      }
    }

    @Override
    public void reportingEntryPublished(TestIdentifier id, ReportEntry entry) {
      Map<String, String> m = entry.getKeyValuePairs();
      if (m.containsKey("progress")) {
        if (System.nanoTime() - lastPrint > 2_000_000_000L) {
          out.println(
              "  "
                  + m.get("progress")
                  + ": "
                  + m.get("schedules")
                  + " schedules, "
                  + m.get("faults")
                  + " faults injected so far");
          lastPrint = System.nanoTime();
        }
      } else if (m.containsKey("notApplicable")) {
        Row row = current();
        row.notApplicable = m.get("why");
        out.println("  not applicable on " + m.get("database") + ": " + m.get("why"));
      } else if (m.containsKey("result")) {
        PropertyResult r = ResultEntries.decode(m);
        Row row = current();
        row.result = r;
        row.database = r.database();
        out.println(
            "  "
                + r.property()
                + " on "
                + r.database()
                + ": "
                + r.verdict()
                + " after "
                + r.schedules()
                + " schedules, "
                + r.faults()
                + " faults ("
                + seconds(r.millis())
                + ")");
      }
    }

    @Override
    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
      if (result.getStatus() == TestExecutionResult.Status.FAILED) {
        String message = result.getThrowable().map(Throwable::toString).orElse("failed");
        if (id.isTest()) {
          Row row = current();
          if (row.result == null) {
            row.error = message;
          }
        } else if (rows.isEmpty() || id.getParentId().isEmpty()) {
          Row row = new Row("(suite)", target.label());
          row.error = message;
          rows.add(row);
        }
      }
    }

    private Row current() {
      return rows.get(rows.size() - 1);
    }
  }

  private static final String FORMAT = "%-30s %-22s %-12s %9s %8s %10s %8s%n";

  /** Prints the properties' table; returns the exit status it means. */
  private static int propertiesTable(List<Row> rows, PrintStream out) {
    out.println();
    out.printf(
        FORMAT, "property", "database", "result", "schedules", "faults", "violations", "time");
    boolean failed = rows.isEmpty();
    boolean inconclusive = false;
    for (Row r : rows) {
      PropertyResult p = r.result;
      PropertyResult.Verdict v = r.verdict();
      failed |= v == PropertyResult.Verdict.FAILS;
      inconclusive |= v == PropertyResult.Verdict.INCONCLUSIVE;
      String result =
          r.error != null
              ? "ERROR"
              : switch (v) {
                case HOLDS -> "holds";
                case FAILS -> "FAILS";
                case INCONCLUSIVE -> "INCONCLUSIVE";
              };
      printRow(out, r, result);
      if (p != null) {
        printCounts(out, p);
      }
    }
    for (Row r : rows) {
      if (r.verdict() == PropertyResult.Verdict.FAILS) {
        out.println(
            "\n"
                + r.id
                + " on "
                + r.database
                + " does not hold:\n"
                + (r.result != null && r.result.failure() != null ? r.result.failure() : r.error));
      }
    }
    return failed ? VIOLATED : inconclusive ? INCONCLUSIVE : HOLDS;
  }

  /** Prints the controls' table; returns 0 when every applicable control was caught. */
  private static int controlsTable(List<Row> rows, PrintStream out) {
    out.println();
    out.printf(
        FORMAT, "control", "database", "result", "schedules", "faults", "violations", "time");
    boolean missed = rows.isEmpty();
    for (Row r : rows) {
      String result;
      if (r.notApplicable != null) {
        result = "n/a";
      } else if (r.error != null && r.result == null) {
        result = "ERROR";
        missed = true;
      } else if (NegativeControl.caught(r.result)) {
        result = "caught";
      } else {
        result = "NOT CAUGHT";
        missed = true;
      }
      printRow(out, r, result);
      out.println("    " + describe(r.id));
      if (r.notApplicable != null) {
        out.println("    n/a: " + r.notApplicable);
      } else if (r.result != null && NegativeControl.caught(r.result)) {
        out.println("    caught: " + firstViolation(r.result.failure()));
      } else if (r.result != null) {
        printCounts(out, r.result);
      } else if (r.error != null) {
        out.println("    error: " + r.error);
      }
    }
    return missed ? VIOLATED : HOLDS;
  }

  /** The line of a failure report that says what broke. */
  static String firstViolation(String failure) {
    if (failure == null) {
      return "";
    }
    return failure
        .lines()
        .map(String::strip)
        .filter(
            l ->
                l.startsWith("invariant")
                    || l.startsWith("violation:")
                    || l.startsWith("disagreement:")
                    || l.startsWith("liveness")
                    || l.startsWith("lease-jdbc"))
        .findFirst()
        .orElse(failure.lines().findFirst().orElse(""));
  }

  private static void printRow(PrintStream out, Row r, String result) {
    PropertyResult p = r.result;
    out.printf(
        FORMAT,
        r.id,
        r.database,
        result,
        p == null ? "-" : p.schedules(),
        p == null ? "-" : p.faults(),
        p == null ? "-" : p.violations(),
        p == null ? "-" : seconds(p.millis()));
  }

  private static void printCounts(PrintStream out, PropertyResult p) {
    for (PropertyResult.Count c : p.counts()) {
      out.println(
          "    "
              + (c.required() > 0 ? (c.enough() ? "  " : "!!") + " " : "   ")
              + c.event()
              + ": "
              + c.observed()
              + (c.required() > 0 ? " (needs " + c.required() + ")" : ""));
    }
    if (p.note() != null) {
      out.println("    note: " + p.note());
    }
  }

  /** The durations this run measured: each row's, and the whole run's. */
  private static String durations(List<Row> rows, long startedNanos) {
    String each =
        rows.stream()
            .filter(r -> r.result != null)
            .map(r -> r.id + " " + seconds(r.result.millis()))
            .collect(Collectors.joining(", "));
    return "\ndurations measured by this run: "
        + (each.isEmpty() ? "" : each + "; ")
        + "total "
        + seconds((System.nanoTime() - startedNanos) / 1_000_000)
        + " (from start to this line, connecting and setting up included)";
  }

  private static String seconds(long millis) {
    return String.format("%.1f s", millis / 1000.0);
  }

  private static void deleteRecursively(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // best effort; the directory is in the system's temporary directory
    }
  }
}
