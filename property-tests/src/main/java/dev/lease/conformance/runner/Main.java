package dev.lease.conformance.runner;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

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
 * suite against one database through the JUnit Platform Launcher, shows progress, and ends with a
 * table of property × database × result. Exit status 0 only when every property holds.
 */
public final class Main {

  static final int HOLDS = 0;
  static final int VIOLATED = 1;
  static final int BAD_INPUT = 2;

  private Main() {}

  public static void main(String[] args) {
    System.exit(run(args, System.getenv(), System.out, System.err));
  }

  static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
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
      // WAL lets the holder's readers and a claimer's write overlap, as DESIGN.md measured
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
          "lease conformance: "
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
      boolean allHold = !rows.isEmpty() && rows.stream().allMatch(Row::holds);
      printTable(rows, out);
      for (Row r : rows) {
        if (!r.holds()) {
          out.println(
              "\n"
                  + r.property
                  + " on "
                  + r.database
                  + " does not hold:\n"
                  + (r.result != null && r.result.failure() != null
                      ? r.result.failure()
                      : r.error));
        }
      }
      out.println(
          allHold
              ? "\nevery property holds (seed " + seed + ")"
              : "\nNOT every property holds; replay with --seed " + seed);
      return allHold ? HOLDS : VIOLATED;
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
    final String property;
    String database;
    PropertyResult result;
    String error;

    Row(String property, String database) {
      this.property = property;
      this.database = database;
    }

    boolean holds() {
      return error == null && result != null && result.holds();
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
    LauncherDiscoveryRequest discovery = request.build();
    List<Row> rows = new ArrayList<>();
    Progress progress = new Progress(out, rows, target);
    Launcher launcher = LauncherFactory.create();
    launcher.execute(discovery, progress);
    return rows;
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
        String summary =
            Properties.all().stream()
                .filter(p -> p.id().equals(id.getDisplayName()))
                .map(p -> p.summary())
                .findFirst()
                .orElse("");
        out.println("\n[" + id.getDisplayName() + "] " + summary);
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
                + (r.holds() ? "holds" : "VIOLATED")
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
      if (result.getStatus() != TestExecutionResult.Status.SUCCESSFUL) {
        String message = result.getThrowable().map(Throwable::toString).orElse("aborted");
        if (id.isTest()) {
          Row row = current();
          if (row.result == null || row.result.holds()) {
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

  private static void printTable(List<Row> rows, PrintStream out) {
    String format = "%-16s %-24s %-9s %10s %8s %11s %9s%n";
    out.println();
    out.printf(
        format, "property", "database", "result", "schedules", "faults", "violations", "time");
    for (Row r : rows) {
      PropertyResult p = r.result;
      String result = r.holds() ? "holds" : r.error != null ? "ERROR" : "VIOLATED";
      out.printf(
          format,
          r.property,
          r.database,
          result,
          p == null ? "-" : p.schedules(),
          p == null ? "-" : p.faults(),
          p == null ? "-" : p.violations(),
          p == null ? "-" : seconds(p.millis()));
      if (p != null && p.note() != null) {
        out.println("    note: " + p.note());
      }
    }
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
