package dev.lease.conformance.runner;

import dev.lease.conformance.PropertyResult;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * {@code --campaign}: the properties again and again, each round with a fresh seed derived from the
 * campaign's, until a duration or the counts of a {@link Goal} are reached (issue 38). A status
 * line after every round; a Markdown and a JSON report rewritten every minute and at the end, so a
 * killed campaign still leaves one, with every violation's replay line at the top.
 */
final class Campaign {

  /** Runs one round: {@code items} with {@code seed}, its tables named for round {@code round}. */
  interface Round {
    List<Main.Row> run(List<Main.Item> items, long seed, int round, PrintStream sink);
  }

  /**
   * When a campaign ends: after {@code duration} (null: none), or once the virtual-time properties
   * tried {@code schedules} schedules and the properties on the database {@code faultRuns} runs (0:
   * no count). Whichever is reached first.
   */
  record Goal(Duration duration, long schedules, long faultRuns) {

    /**
     * {@code 2h}, {@code 30m}, {@code 90s}, or {@code schedules=N,fault-runs=M}, or both ({@code
     * duration=2h,schedules=100000,fault-runs=1000}).
     *
     * @throws IllegalArgumentException saying what is accepted
     */
    static Goal parse(String spec) {
      Duration duration = null;
      long schedules = 0;
      long faultRuns = 0;
      for (String part : spec.split(",")) {
        String p = part.trim();
        int eq = p.indexOf('=');
        String key = eq < 0 ? "duration" : p.substring(0, eq).trim();
        String value = eq < 0 ? p : p.substring(eq + 1).trim();
        switch (key) {
          case "duration" -> duration = duration(value);
          case "schedules" -> schedules = count(key, value);
          case "fault-runs" -> faultRuns = count(key, value);
          default -> throw bad(spec);
        }
      }
      if (duration == null && schedules == 0 && faultRuns == 0) {
        throw bad(spec);
      }
      return new Goal(duration, schedules, faultRuns);
    }

    private static Duration duration(String value) {
      if (!value.matches("[0-9]{1,6}[smh]")) {
        throw bad(value);
      }
      long n = Long.parseLong(value.substring(0, value.length() - 1));
      return switch (value.charAt(value.length() - 1)) {
        case 's' -> Duration.ofSeconds(n);
        case 'm' -> Duration.ofMinutes(n);
        default -> Duration.ofHours(n);
      };
    }

    private static long count(String key, String value) {
      try {
        long n = Long.parseLong(value);
        if (n > 0) {
          return n;
        }
      } catch (NumberFormatException e) {
        // below
      }
      throw new IllegalArgumentException(key + "= needs a positive whole number, got " + value);
    }

    private static IllegalArgumentException bad(String spec) {
      return new IllegalArgumentException(
          "--campaign takes a duration (90s, 30m, 2h) or counts (schedules=100000,fault-runs=1000),"
              + " or both (duration=2h,schedules=100000), got "
              + spec);
    }

    boolean countsMet(long virtualSchedules, long realRuns) {
      return (schedules > 0 || faultRuns > 0)
          && virtualSchedules >= schedules
          && realRuns >= faultRuns;
    }

    @Override
    public String toString() {
      List<String> counts = new ArrayList<>();
      if (schedules > 0) {
        counts.add(String.format(Locale.ROOT, "%,d simulated schedules", schedules));
      }
      if (faultRuns > 0) {
        counts.add(String.format(Locale.ROOT, "%,d fault runs", faultRuns));
      }
      String all = String.join(" and ", counts);
      if (duration == null) {
        return all;
      }
      return clock(duration.toMillis()) + (all.isEmpty() ? "" : ", or " + all + " if sooner");
    }
  }

  /** What one property did over the whole campaign. */
  static final class Tally {
    final String id;
    String database = "";
    long runs;
    long schedules;
    long faults;
    long violations;
    long inconclusiveRuns;
    long millis;
    String error;

    /** event -> {observed over all runs, required per run} */
    final Map<String, long[]> events = new LinkedHashMap<>();

    /** The replay line of each run that found a violation, and its first violation. */
    final List<String> replays = new ArrayList<>();

    Tally(String id) {
      this.id = id;
    }

    boolean virtualTime() {
      return database.contains("virtual time");
    }

    void add(Main.Row row, long seed) {
      runs++;
      if (row.database != null) {
        database = row.database;
      }
      PropertyResult r = row.result;
      if (r == null) {
        if (row.notApplicable == null) {
          error = row.error != null ? row.error : "no result";
        }
        return;
      }
      schedules += r.schedules();
      faults += r.faults();
      millis += r.millis();
      violations += r.violations();
      for (PropertyResult.Count c : r.counts()) {
        long[] e = events.computeIfAbsent(c.event(), k -> new long[2]);
        e[0] += c.observed();
        e[1] = Math.max(e[1], c.required());
      }
      switch (r.verdict()) {
        case FAILS ->
            replays.add(
                "--seed "
                    + seed
                    + " --only "
                    + id
                    + ": "
                    + Main.firstViolation(r.failure() != null ? r.failure() : String.valueOf(r)));
        case INCONCLUSIVE -> inconclusiveRuns++;
        case HOLDS -> {}
      }
    }

    /**
     * FAILS with a violation or an error; INCONCLUSIVE unless every required event was observed,
     * over the campaign, at least as often as one run must observe it times the runs; else HOLDS.
     */
    PropertyResult.Verdict verdict() {
      if (violations > 0 || !replays.isEmpty() || error != null) {
        return PropertyResult.Verdict.FAILS;
      }
      boolean anyRequired = false;
      for (long[] e : events.values()) {
        if (e[1] > 0) {
          anyRequired = true;
          if (e[0] < e[1] * runs) {
            return PropertyResult.Verdict.INCONCLUSIVE;
          }
        }
      }
      return anyRequired && runs > 0
          ? PropertyResult.Verdict.HOLDS
          : PropertyResult.Verdict.INCONCLUSIVE;
    }
  }

  private final Goal goal;
  private final List<Main.Item> items;
  private final Round round;
  private final long seed;
  private final String command;
  private final String target;
  private final String server;
  private final Path report;
  private final PrintStream out;
  private final Map<String, Tally> tallies = new LinkedHashMap<>();
  private final long started = System.nanoTime();
  private final Instant startedAt = Instant.now();
  private int rounds;
  private String stopped = "running";
  private String controls = "not run";
  private long lastReport;

  Campaign(
      Goal goal,
      List<Main.Item> items,
      Round round,
      long seed,
      String command,
      String target,
      String server,
      Path report,
      PrintStream out) {
    this.goal = goal;
    this.items = items;
    this.round = round;
    this.seed = seed;
    this.command = command;
    this.target = target;
    this.server = server;
    this.report = report;
    this.out = out;
    for (Main.Item item : items) {
      tallies.put(item.id(), new Tally(item.id()));
    }
  }

  /** The seed of round {@code n}: a fixed function of the campaign's, so each run replays alone. */
  static long roundSeed(long campaignSeed, int n) {
    long z = campaignSeed + (n + 1) * 0x9E3779B97F4A7C15L; // SplitMix64
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Runs rounds until the goal; then the controls once ({@code controls}, may be null). */
  int run(Round controlsRound, List<Main.Item> controlItems) {
    out.println("campaign: until " + goal + "; report " + report + ".md and .json");
    while (true) {
      long virtual = total(true);
      long real = total(false);
      long faultRuns = faultRuns();
      if (goal.duration() != null && elapsedMillis() >= goal.duration().toMillis()) {
        stopped = "its duration passed";
        break;
      }
      if (rounds > 0
          && goal.countsMet(
              hasRuns(true) ? virtual : Long.MAX_VALUE,
              hasRuns(false) ? faultRuns : Long.MAX_VALUE)) {
        stopped = "its counts were reached";
        break;
      }
      List<Main.Item> now = new ArrayList<>();
      for (Main.Item item : items) {
        Tally t = tallies.get(item.id());
        boolean met =
            t.runs > 0
                && goal.duration() == null
                && (t.virtualTime()
                    ? virtual >= goal.schedules()
                    : t.faults > 0 ? faultRuns >= goal.faultRuns() : real >= goal.faultRuns());
        if (!met) {
          // numbered again: a round's items are its own list (launchAll keeps their output by it)
          now.add(new Main.Item(now.size(), item.id(), item.alone()));
        }
      }
      if (now.isEmpty()) {
        stopped = "nothing was left to run";
        break;
      }
      long s = roundSeed(seed, rounds);
      List<Main.Row> rows = round.run(now, s, rounds, sink());
      rounds++;
      for (Main.Row row : rows) {
        tallies.computeIfAbsent(row.id, Tally::new).add(row, s);
      }
      out.println(status());
      out.flush();
      if (tallies.values().stream().anyMatch(t -> t.error != null)) {
        stopped = "a property could not run (an error, not a violation)";
        break;
      }
      if (System.nanoTime() - lastReport > TimeUnit.MINUTES.toNanos(1)) {
        write();
      }
    }
    if (controlsRound != null && !controlItems.isEmpty()) {
      out.println("campaign: the negative controls, once (seed " + seed + ")");
      List<Main.Row> rows = controlsRound.run(controlItems, seed, rounds, sink());
      long caught = rows.stream().filter(r -> r.notApplicable == null && caught(r)).count();
      long applicable = rows.stream().filter(r -> r.notApplicable == null).count();
      List<String> missed =
          rows.stream().filter(r -> r.notApplicable == null && !caught(r)).map(r -> r.id).toList();
      controls =
          caught
              + " of "
              + applicable
              + " caught"
              + (missed.isEmpty() ? "" : "; NOT caught: " + String.join(", ", missed))
              + (rows.size() > applicable ? " (" + (rows.size() - applicable) + " n/a here)" : "");
      out.println("campaign: controls " + controls);
      if (!missed.isEmpty()) {
        stopped += "; a control was not caught";
      }
    }
    write();
    int status = status(controls.contains("NOT caught"));
    out.println(
        "\ncampaign "
            + (status == Main.HOLDS
                ? "held"
                : status == Main.INCONCLUSIVE ? "INCONCLUSIVE" : "found a VIOLATION")
            + " after "
            + clock(elapsedMillis())
            + ", "
            + rounds
            + " rounds ("
            + stopped
            + "); report: "
            + report
            + ".md");
    return status;
  }

  private static boolean caught(Main.Row r) {
    return r.result != null && dev.lease.conformance.NegativeControl.caught(r.result);
  }

  private int status(boolean controlMissed) {
    boolean failed = controlMissed;
    boolean inconclusive = false;
    for (Tally t : tallies.values()) {
      PropertyResult.Verdict v = t.verdict();
      failed |= v == PropertyResult.Verdict.FAILS;
      inconclusive |= v == PropertyResult.Verdict.INCONCLUSIVE;
    }
    return failed ? Main.VIOLATED : inconclusive ? Main.INCONCLUSIVE : Main.HOLDS;
  }

  /** Each round's own lines go nowhere: the status line and the report say what they found. */
  private static PrintStream sink() {
    return new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8) {
      @Override
      public void write(byte[] b, int off, int len) {
        // discarded
      }
    };
  }

  /** Whether a property of that kind ran: a count asked of a kind none of --only has is met. */
  private boolean hasRuns(boolean virtualTime) {
    return tallies.values().stream().anyMatch(t -> t.runs > 0 && t.virtualTime() == virtualTime);
  }

  /**
   * The fault runs so far: the schedules of the properties that inject faults into the database
   * ({@code fault-run}, {@code paused-holder}); without one of them, every schedule on the
   * database.
   */
  private long faultRuns() {
    List<Tally> injecting =
        tallies.values().stream().filter(t -> !t.virtualTime() && t.faults > 0).toList();
    return injecting.isEmpty()
        ? total(false)
        : injecting.stream().mapToLong(t -> t.schedules).sum();
  }

  private long total(boolean virtualTime) {
    return tallies.values().stream()
        .filter(t -> t.virtualTime() == virtualTime && t.runs > 0)
        .mapToLong(t -> t.schedules)
        .sum();
  }

  private long elapsedMillis() {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
  }

  /** One plain line: where the campaign stands. */
  String status() {
    long violations =
        tallies.values().stream().mapToLong(t -> Math.max(t.violations, t.replays.size())).sum();
    String left =
        goal.duration() == null
            ? ""
            : ", " + clock(Math.max(0, goal.duration().toMillis() - elapsedMillis())) + " left";
    return String.format(
        Locale.ROOT,
        "campaign %s%s: round %d; simulated schedules %,d%s; fault runs %,d%s (schedules on the"
            + " database %,d); violations %d; %s",
        clock(elapsedMillis()),
        left,
        rounds,
        total(true),
        goal.schedules() > 0 ? String.format(Locale.ROOT, " of %,d", goal.schedules()) : "",
        faultRuns(),
        goal.faultRuns() > 0 ? String.format(Locale.ROOT, " of %,d", goal.faultRuns()) : "",
        total(false),
        violations,
        tallies.values().stream()
            .filter(t -> t.runs > 0)
            .map(t -> t.id + " " + t.runs + "×" + String.format(Locale.ROOT, "%,d", t.schedules))
            .collect(Collectors.joining(", ")));
  }

  /** Writes the report (Markdown and JSON), each through a temporary file and a move. */
  void write() {
    lastReport = System.nanoTime();
    try {
      Path parent = report.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      replace(Path.of(report + ".md"), markdown());
      replace(Path.of(report + ".json"), json());
    } catch (IOException e) {
      out.println("campaign: could not write the report " + report + ": " + e.getMessage());
    }
  }

  private static void replace(Path file, String text) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    Files.writeString(tmp, text, StandardCharsets.UTF_8);
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  String markdown() {
    StringBuilder b = new StringBuilder();
    b.append("# Conformance campaign\n\n");
    List<String> replays = new ArrayList<>();
    for (Tally t : tallies.values()) {
      t.replays.forEach(r -> replays.add("`java -jar lease-conformance.jar " + urlPart() + r));
    }
    if (!replays.isEmpty()) {
      b.append("**VIOLATIONS** (replay each with its line):\n\n");
      replays.forEach(r -> b.append("- ").append(r.replaceFirst(": ", "`: ")).append('\n'));
      b.append('\n');
    }
    b.append("| | |\n|---|---|\n");
    b.append("| command | `").append(command).append("` |\n");
    b.append("| target | ").append(target).append(" (").append(server).append(") |\n");
    b.append("| campaign seed | ").append(seed).append(" (round n: `Campaign.roundSeed`) |\n");
    b.append("| goal | ").append(goal).append(" |\n");
    b.append("| started | ").append(startedAt).append(" |\n");
    b.append("| duration | ").append(clock(elapsedMillis())).append(", ").append(rounds);
    b.append(" rounds (").append(stopped).append(") |\n");
    b.append("| library commit | ").append(commit()).append(" |\n");
    b.append("| negative controls | ").append(controls).append(" |\n\n");
    b.append("| property | database | verdict | runs | schedules | faults | violations |");
    b.append(" inconclusive runs | time |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (Tally t : tallies.values()) {
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %s | %,d | %,d | %,d | %d | %d | %s |%n",
              t.id,
              t.database,
              t.error != null ? "ERROR" : t.verdict().name().toLowerCase(Locale.ROOT),
              t.runs,
              t.schedules,
              t.faults,
              Math.max(t.violations, t.replays.size()),
              t.inconclusiveRuns,
              clock(t.millis)));
    }
    b.append("\nEvents observed (required per run in brackets):\n\n");
    for (Tally t : tallies.values()) {
      if (t.events.isEmpty() && t.error == null) {
        continue;
      }
      b.append("- **").append(t.id).append("**: ");
      b.append(
          t.events.entrySet().stream()
              .map(
                  e ->
                      e.getKey()
                          + " "
                          + String.format(Locale.ROOT, "%,d", e.getValue()[0])
                          + (e.getValue()[1] > 0 ? " [" + e.getValue()[1] + "]" : ""))
              .collect(Collectors.joining("; ")));
      if (t.error != null) {
        b.append(" ERROR: ").append(t.error);
      }
      b.append('\n');
    }
    return b.toString();
  }

  String json() {
    StringBuilder b = new StringBuilder("{\n");
    b.append("  \"command\": ").append(q(command)).append(",\n");
    b.append("  \"target\": ").append(q(target)).append(",\n");
    b.append("  \"server\": ").append(q(server)).append(",\n");
    b.append("  \"seed\": ").append(seed).append(",\n");
    b.append("  \"goal\": ").append(q(goal.toString())).append(",\n");
    b.append("  \"started\": ").append(q(startedAt.toString())).append(",\n");
    b.append("  \"millis\": ").append(elapsedMillis()).append(",\n");
    b.append("  \"rounds\": ").append(rounds).append(",\n");
    b.append("  \"stopped\": ").append(q(stopped)).append(",\n");
    b.append("  \"commit\": ").append(q(commit())).append(",\n");
    b.append("  \"controls\": ").append(q(controls)).append(",\n");
    b.append("  \"status\": ").append(status(controls.contains("NOT caught"))).append(",\n");
    b.append("  \"properties\": [");
    String sep = "\n";
    for (Tally t : tallies.values()) {
      b.append(sep).append("    {\"id\": ").append(q(t.id));
      b.append(", \"database\": ").append(q(t.database));
      b.append(", \"verdict\": ").append(q(t.error != null ? "ERROR" : t.verdict().name()));
      b.append(", \"runs\": ").append(t.runs);
      b.append(", \"schedules\": ").append(t.schedules);
      b.append(", \"faults\": ").append(t.faults);
      b.append(", \"violations\": ").append(Math.max(t.violations, t.replays.size()));
      b.append(", \"inconclusiveRuns\": ").append(t.inconclusiveRuns);
      b.append(", \"millis\": ").append(t.millis);
      b.append(", \"replays\": [")
          .append(t.replays.stream().map(Campaign::q).collect(Collectors.joining(", ")))
          .append("]");
      b.append(", \"events\": {");
      b.append(
          t.events.entrySet().stream()
              .map(
                  e ->
                      q(e.getKey())
                          + ": {\"observed\": "
                          + e.getValue()[0]
                          + ", \"requiredPerRun\": "
                          + e.getValue()[1]
                          + "}")
              .collect(Collectors.joining(", ")));
      b.append("}}");
      sep = ",\n";
    }
    b.append("\n  ]\n}\n");
    return b.toString();
  }

  private String urlPart() {
    return command.contains("--url") ? "--url … " : "";
  }

  static String q(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : String.valueOf(s).toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }

  static String clock(long millis) {
    long s = millis / 1000;
    return String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  }

  /**
   * The library's commit, if the runner's jar (or classes) sits in a checkout ({@code git describe}
   * there); else "unknown".
   */
  static String commit() {
    try {
      Path here =
          Path.of(Campaign.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      Path dir = Files.isDirectory(here) ? here : here.getParent();
      Process p =
          new ProcessBuilder("git", "-C", dir.toString(), "describe", "--always", "--dirty")
              .redirectErrorStream(true)
              .start();
      String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      return p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0 && !s.isEmpty() ? s : "unknown";
    } catch (IOException | RuntimeException | java.net.URISyntaxException e) {
      return "unknown";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
  }
}
