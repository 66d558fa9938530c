package dev.lease.conformance.runner;

import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Target;
import java.io.PrintStream;
import java.util.List;
import java.util.Map;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.reporting.ReportEntry;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/** Shows progress while the suite runs and collects the rows of the table. */
final class Progress implements TestExecutionListener {
  private final PrintStream out;
  private final List<Main.Row> rows;
  private final Target target;

  /** Progress lines only while the output is live: kept for later, "so far" means nothing. */
  private final boolean live;

  private long lastPrint;

  Progress(PrintStream out, List<Main.Row> rows, Target target, boolean live) {
    this.out = out;
    this.rows = rows;
    this.target = target;
    this.live = live;
  }

  @Override
  public void executionStarted(TestIdentifier id) {
    if (id.isTest()) {
      out.println("\n[" + id.getDisplayName() + "] " + Main.describe(id.getDisplayName()));
      rows.add(new Main.Row(id.getDisplayName(), target.label()));
      lastPrint = System.nanoTime();
    }
  }

  @Override
  public void reportingEntryPublished(TestIdentifier id, ReportEntry entry) {
    Map<String, String> m = entry.getKeyValuePairs();
    if (m.containsKey("progress")) {
      if (live && System.nanoTime() - lastPrint > 2_000_000_000L) {
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
      Main.Row row = current();
      row.notApplicable = m.get("why");
      out.println("  not applicable on " + m.get("database") + ": " + m.get("why"));
    } else if (m.containsKey("result")) {
      PropertyResult r = ResultEntries.decode(m);
      Main.Row row = current();
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
              + Main.seconds(r.millis())
              + ")");
    }
  }

  @Override
  public void executionFinished(TestIdentifier id, TestExecutionResult result) {
    if (result.getStatus() == TestExecutionResult.Status.FAILED) {
      String message = result.getThrowable().map(Throwable::toString).orElse("failed");
      if (id.isTest()) {
        Main.Row row = current();
        if (row.result == null) {
          row.error = message;
        }
      } else if (rows.isEmpty() || id.getParentId().isEmpty()) {
        Main.Row row = new Main.Row("(suite)", target.label());
        row.error = message;
        rows.add(row);
      }
    }
  }

  private Main.Row current() {
    return rows.get(rows.size() - 1);
  }
}
