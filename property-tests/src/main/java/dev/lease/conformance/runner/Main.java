package dev.lease.conformance.runner;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.Properties;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Target;
import dev.lease.conformance.failover.FailoverProperty;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
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
      url = embeddedUrl(tempDir, "conformance");
    }
    Target target = new Target(url, options.user(), options.password());
    List<Item> items = items(options);
    // a SQLite file the user named is one database: properties at once would queue on its one
    // write lock and see each other's waits
    int parallel = tempDir == null && target.isSqlite() ? 1 : options.parallel();
    List<Target> targets = new ArrayList<>();
    targets.add(target);
    try {
      Preflight.check(target);
      long seed = options.seed() != null ? options.seed() : new SecureRandom().nextLong();
      String inTurn =
          parallel > 1 && items.size() > 1
              ? ", " + Math.min(parallel, items.size()) + " at a time"
              : ", one at a time";
      out.println(
          "lease conformance"
              + (options.controls() ? " (negative controls)" : "")
              + ": "
              + target
              + ", "
              + options.size().name().toLowerCase()
              + " size, seed "
              + seed
              + inTurn
              + (tempDir == null
                  ? ""
                  : parallel > 1
                      ? " (each on its own embedded SQLite in " + tempDir + ")"
                      : " (embedded SQLite in " + tempDir + ")")
              + ", tables "
              + target.tablePrefix()
              + "* (dropped at the end)");
      Path dir = tempDir;
      if (options.campaign() != null) {
        Campaign.Round round =
            (its, s, n, sink) -> {
              List<Target> used = new ArrayList<>();
              try {
                return launchAll(
                    its,
                    parallel,
                    targetOf(target, dir, parallel, "r" + n, used),
                    options,
                    s,
                    sink);
              } finally {
                used.forEach(Preflight::sweep); // each round's tables, before the next round
              }
            };
        Options controls = options.withControls();
        Campaign.Round controlsRound =
            (its, s, n, sink) -> {
              List<Target> used = new ArrayList<>();
              try {
                return launchAll(
                    its, parallel, targetOf(target, dir, parallel, "c", used), controls, s, sink);
              } finally {
                used.forEach(Preflight::sweep);
              }
            };
        return new Campaign(
                Campaign.Goal.parse(options.campaign()),
                items,
                round,
                seed,
                command(args, options),
                target.label() + (tempDir == null ? "" : " (embedded)"),
                Preflight.serverVersion(target),
                Path.of(options.report() != null ? options.report() : "lease-campaign"),
                out)
            .run(controlsRound, items(controls));
      }
      List<Row> rows =
          launchAll(
              items, parallel, targetOf(target, dir, parallel, "", targets), options, seed, out);
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
      synchronized (targets) {
        targets.forEach(Preflight::sweep);
      }
      if (tempDir != null) {
        deleteRecursively(tempDir);
      }
    }
  }

  /**
   * Where each item runs: its own tables ({@code prefix} + its order: each launch counts its tables
   * from 1 again), and with no --url and several at a time its own embedded SQLite file. Every
   * target made is added to {@code made}, to be swept.
   */
  private static Function<Item, Target> targetOf(
      Target target, Path dir, int parallel, String prefix, List<Target> made) {
    return item -> {
      String tables = target.tablePrefix() + prefix + "p" + item.order() + "_";
      Target own =
          dir == null || parallel == 1
              ? new Target(target.url(), target.user(), target.password(), tables)
              : new Target(
                  embeddedUrl(dir, item.fileName()), target.user(), target.password(), tables);
      synchronized (made) {
        made.add(own);
      }
      return own;
    };
  }

  /** The command line as a user would type it again, the password left out. */
  private static String command(String[] args, Options options) {
    List<String> shown = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--password") && i + 1 < args.length) {
        shown.add("--password ***");
        i++;
      } else if (args[i].startsWith("--password=")) {
        shown.add("--password=***");
      } else {
        shown.add(args[i]);
      }
    }
    return "java -jar lease-conformance.jar " + String.join(" ", shown);
  }

  /** The embedded database {@code name}.db in {@code dir}. */
  private static String embeddedUrl(Path dir, String name) {
    // WAL, as most applications run SQLite: readers and one writer overlap
    return "jdbc:sqlite:" + dir.resolve(name + ".db") + "?journal_mode=WAL&busy_timeout=5000";
  }

  /**
   * One test of the suite the runner launches by itself: a property, or with --controls a control.
   *
   * @param order its place in the output and the table
   * @param alone it runs with nothing else at the same time: the failover property fails the
   *     database over, which every other property on that database would see
   */
  record Item(int order, String id, boolean alone) {
    String fileName() {
      return String.format("%02d-%s", order, id.replaceAll("[^a-z0-9-]", "-"));
    }
  }

  /** What this run checks, in the suite's order (the selection ConformanceSuite makes). */
  static List<Item> items(Options options) {
    Set<String> only =
        options.only() == null
            ? Set.of()
            : Arrays.stream(options.only().split(","))
                .map(String::trim)
                .filter(x -> !x.isEmpty())
                .collect(Collectors.toSet());
    List<ConformanceProperty> properties = new ArrayList<>(Properties.all());
    if (options.failoverCommand() != null) {
      properties.add(new FailoverProperty(null));
    }
    List<Item> items = new ArrayList<>();
    for (ConformanceProperty p : properties) {
      boolean alone = p instanceof FailoverProperty;
      if (options.controls()) {
        for (NegativeControl c : p.controls()) {
          if (only.isEmpty() || only.contains(p.id()) || only.contains(c.id())) {
            items.add(new Item(items.size(), c.id(), alone));
          }
        }
      } else if (only.isEmpty() || only.contains(p.id())) {
        items.add(new Item(items.size(), p.id(), alone));
      }
    }
    return items;
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

  /**
   * Checks {@code items}, {@code parallel} at a time (the ones that must run alone after the
   * others), each through its own JUnit launch. With one at a time the progress goes straight to
   * {@code out}; otherwise each item's lines are kept until it and every item before it have
   * finished, so the output reads as if they had run in order.
   */
  static List<Row> launchAll(
      List<Item> items,
      int parallel,
      Function<Item, Target> targetOf,
      Options options,
      long seed,
      PrintStream out) {
    if (parallel == 1 || items.size() <= 1) {
      List<Row> rows = new ArrayList<>();
      for (Item item : items) {
        rows.addAll(launch(item, targetOf.apply(item), options, seed, out, true));
      }
      return rows;
    }
    int n = items.size();
    List<List<Row>> rows = new ArrayList<>(Collections.nCopies(n, null));
    List<ByteArrayOutputStream> buffers = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      buffers.add(new ByteArrayOutputStream());
    }
    int[] printed = {0};
    Runnable flush =
        () -> {
          synchronized (rows) {
            while (printed[0] < n && rows.get(printed[0]) != null) {
              out.print(buffers.get(printed[0]).toString(StandardCharsets.UTF_8));
              out.flush();
              printed[0]++;
            }
          }
        };
    AtomicInteger threads = new AtomicInteger();
    ExecutorService pool =
        Executors.newFixedThreadPool(
            Math.min(parallel, n),
            r -> {
              Thread t = new Thread(r, "lease-conformance-" + threads.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    try {
      List<Future<?>> running = new ArrayList<>();
      List<Item> longestFirst = new ArrayList<>(items);
      longestFirst.sort(Comparator.comparingInt(Main::startRank));
      for (Item item : longestFirst) {
        if (!item.alone()) {
          running.add(
              pool.submit(
                  () -> launchBuffered(item, targetOf, options, seed, buffers, rows, flush)));
        }
      }
      awaitAll(running);
      for (Item item : items) {
        if (item.alone()) {
          awaitAll(
              List.of(
                  pool.submit(
                      () -> launchBuffered(item, targetOf, options, seed, buffers, rows, flush))));
        }
      }
    } finally {
      pool.shutdownNow();
      flush.run(); // what finished, in order, even when the wait was cut short
    }
    List<Row> all = new ArrayList<>();
    rows.forEach(all::addAll);
    return all;
  }

  /**
   * The properties that take longest (mostly waiting on real time: lease durations, paused holders;
   * docs/benchmarks.md has each one's duration), started first so that the run does not end with
   * one of them running alone; the others follow in the suite's order.
   */
  private static final List<String> LONGEST_FIRST =
      List.of("raw-path", "sql-text-takeover", "fault-run", "simulation");

  private static int startRank(Item item) {
    int slash = item.id().indexOf('/');
    int rank = LONGEST_FIRST.indexOf(slash < 0 ? item.id() : item.id().substring(0, slash));
    return rank < 0 ? LONGEST_FIRST.size() : rank;
  }

  private static void launchBuffered(
      Item item,
      Function<Item, Target> targetOf,
      Options options,
      long seed,
      List<ByteArrayOutputStream> buffers,
      List<List<Row>> rows,
      Runnable flush) {
    PrintStream sink = new PrintStream(buffers.get(item.order()), true, StandardCharsets.UTF_8);
    List<Row> mine;
    Target target = null;
    try {
      // inside the try: an item whose target cannot be set up (its embedded database file) is a
      // failed row like any other, and the items before and after it still print their output
      target = targetOf.apply(item);
      mine = launch(item, target, options, seed, sink, false);
    } catch (RuntimeException | Error e) {
      Row row = new Row(item.id(), target != null ? target.label() : "not set up");
      row.error = e.toString();
      mine = List.of(row);
    }
    synchronized (rows) {
      rows.set(item.order(), mine);
      flush.run();
    }
  }

  private static void awaitAll(List<Future<?>> futures) {
    for (Future<?> f : futures) {
      try {
        f.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while the properties ran", e);
      } catch (ExecutionException e) {
        // launchBuffered records its own failure as a row; nothing else throws
        throw new IllegalStateException(e.getCause());
      }
    }
  }

  /** Runs one item through the JUnit Platform Launcher; returns its rows. */
  private static List<Row> launch(
      Item item, Target target, Options options, long seed, PrintStream out, boolean live) {
    LauncherDiscoveryRequestBuilder request =
        LauncherDiscoveryRequestBuilder.request()
            .selectors(selectClass(ConformanceSuite.class))
            .configurationParameter(SuiteSettings.URL, target.url())
            .configurationParameter(SuiteSettings.TABLE_PREFIX, target.tablePrefix())
            .configurationParameter(SuiteSettings.SIZE, options.size().name())
            .configurationParameter(SuiteSettings.SEED, Long.toString(seed))
            .configurationParameter(SuiteSettings.CONTROLS, Boolean.toString(options.controls()))
            .configurationParameter(SuiteSettings.ONLY, item.id())
            // the suite is this jar's own; nothing else on the class path is a conformance test
            .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "false");
    if (target.user() != null) {
      request.configurationParameter(SuiteSettings.USER, target.user());
    }
    if (target.password() != null) {
      request.configurationParameter(SuiteSettings.PASSWORD, target.password());
    }
    if (options.failoverCommand() != null) {
      request.configurationParameter(SuiteSettings.FAILOVER_COMMAND, options.failoverCommand());
      if (options.failoverPrepare() != null) {
        request.configurationParameter(SuiteSettings.FAILOVER_PREPARE, options.failoverPrepare());
      }
      if (options.failoverReplication() != null) {
        request.configurationParameter(
            SuiteSettings.FAILOVER_REPLICATION, options.failoverReplication());
      }
      if (options.failoverStall() != null) {
        request.configurationParameter(SuiteSettings.FAILOVER_STALL, options.failoverStall());
      }
    }
    LauncherDiscoveryRequest discovery = request.build();
    List<Row> rows = new ArrayList<>();
    Progress progress = new Progress(out, rows, target, live);
    Launcher launcher = LauncherFactory.create();
    launcher.execute(discovery, progress);
    return rows;
  }

  /** What a row is about, in one line: the property's headline or what the control breaks. */
  static String describe(String id) {
    for (ConformanceProperty p : Properties.all()) {
      if (p.id().equals(id)) {
        return p.headline();
      }
      for (NegativeControl c : p.controls()) {
        if (c.id().equals(id)) {
          return "negative control, must be caught: " + c.breaks();
        }
      }
    }
    return "";
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
        + " (from start to this line, connecting and setting up included)"
        + processCpu();
  }

  /** The JVM's CPU time so far (all threads, user and system), where the platform tells it. */
  private static String processCpu() {
    if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      long nanos = os.getProcessCpuTime();
      if (nanos >= 0) {
        return "; CPU " + seconds(nanos / 1_000_000) + " (all threads, user and system)";
      }
    }
    return "";
  }

  static String seconds(long millis) {
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
