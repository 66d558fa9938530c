package dev.lease.conformance.runner;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.Properties;
import dev.lease.conformance.Size;
import dev.lease.conformance.failover.FailoverProperty;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/** The runner's command line, with LEASE_URL / LEASE_USER / LEASE_PASSWORD as fallbacks. */
record Options(
    String url,
    String user,
    String password,
    Size size,
    Long seed,
    String only,
    boolean controls,
    boolean help,
    String failoverCommand,
    String failoverPrepare,
    String failoverStall,
    String failoverReplication,
    int parallel,
    String campaign,
    String report) {

  /**
   * Properties checked at once by default: they mostly wait (lease durations, pauses, timeouts).
   */
  static final int DEFAULT_PARALLEL = 4;

  static final String USAGE =
      String.join(
          "\n",
          "usage: java -jar lease-conformance.jar [--url JDBC_URL] [--user USER] [--password PASSWORD]",
          "                                      [--quick | --full] [--seed N] [--only ID[,ID...]]",
          "                                      [--parallel N] [--controls] [--failover-command CMD",
          "                                      [--failover-prepare-command CMD]",
          "                                      [--failover-stall-command CMD]",
          "                                      [--failover-replication sync|async]]",
          "                                      [--campaign DURATION|COUNTS [--report PATH]]",
          "",
          "Checks the lease protocol's guarantees against a database and prints a table of",
          "property x database x result, with the events each property counted. Exit status:",
          "0 every property holds, 1 a property does not hold (or, with --controls, a control was",
          "not caught), 2 bad input (unreachable or unsupported database, no permission to create",
          "tables, an unknown argument or id), 3 a property was inconclusive: it did not observe",
          "the events it must observe to count as a test.",
          "",
          "  (no --url)     an embedded SQLite database in a temporary directory, removed afterwards",
          "  --url          jdbc:postgresql://..., jdbc:mysql://..., jdbc:mariadb://... or jdbc:sqlite:...",
          "                 (environment: LEASE_URL); the user needs CREATE and DROP TABLE: the run makes",
          "                 its own tables (prefix lc_<random>_) and drops them afterwards",
          "  --user, --password   (environment: LEASE_USER, LEASE_PASSWORD)",
          "  --quick        the CI size (default); --full tries many more schedules",
          "  --seed N       replays the schedules of a previous run (a failure prints its seed)",
          "  --only IDS     checks only these properties: " + String.join(", ", propertyIds()),
          "  --parallel N   checks N properties at a time (default "
              + DEFAULT_PARALLEL
              + "), each on its own",
          "                 tables, and with no --url each on its own embedded SQLite file; the output",
          "                 and the table keep the properties' order. --parallel 1 checks them one",
          "                 after the other, with live progress. A --url naming a SQLite file and the",
          "                 failover property always run one at a time (one file, one primary)",
          "  --controls     runs the negative controls instead: deliberately broken variants of the",
          "                 fence and the protocol, each of which the suite must catch on this",
          "                 database (--only then also takes a control's id)",
          "  --failover-command CMD   adds the failover property: rounds of holders doing fenced",
          "                 transactions and hand-overs while CMD (run with sh -c) kills the primary",
          "                 and promotes a replica; it must return once the new primary takes writes.",
          "                 The URL must reach whichever server is primary (pgjdbc's",
          "                 targetServerType=primary, a proxy, a virtual IP). Without it the",
          "                 failover property is skipped, never passed",
          "  --failover-prepare-command CMD   run before each round: the pair healthy again",
          "  --failover-stall-command CMD     run right before the failover's moment: stop",
          "                 shipping changes to the replica (replication lag on demand)",
          "  --failover-replication sync|async   what the pair promises: with sync, a lost",
          "                 acknowledged commit, a lost hand-over or a repeated term is a violation;",
          "                 without it the runner reads it from the primary (PostgreSQL",
          "                 synchronous_standby_names and synchronous_commit, MariaDB's semi-sync",
          "                 status), and your declaration wins",
          "  --campaign SPEC   checks the properties again and again, each round with a fresh seed",
          "                 derived from --seed, until SPEC: a duration (90s, 30m, 2h) or counts",
          "                 (schedules=100000,fault-runs=1000: schedules of the virtual-time",
          "                 properties, runs of fault-run and paused-holder), or both",
          "                 (duration=2h,schedules=100000); a status line after each round, the",
          "                 negative controls once at the end, and a report (--report PATH: PATH.md",
          "                 and PATH.json, default lease-campaign) rewritten every minute");

  static List<String> propertyIds() {
    List<String> ids =
        new ArrayList<>(Properties.all().stream().map(ConformanceProperty::id).toList());
    ids.add(new FailoverProperty(null).id()); // runs only with --failover-command
    return ids;
  }

  static List<String> controlIds() {
    List<String> ids =
        new ArrayList<>(Properties.controls().stream().map(NegativeControl::id).toList());
    new FailoverProperty(null).controls().forEach(c -> ids.add(c.id()));
    return ids;
  }

  /**
   * @throws IllegalArgumentException with a message for the user
   */
  static Options parse(String[] args, Map<String, String> env) {
    String url = env.get("LEASE_URL");
    String user = env.get("LEASE_USER");
    String password = env.get("LEASE_PASSWORD");
    Size size = Size.QUICK;
    Long seed = null;
    String only = null;
    boolean controls = false;
    boolean help = false;
    String failoverCommand = null;
    String failoverPrepare = null;
    String failoverStall = null;
    String failoverReplication = null;
    int parallel = DEFAULT_PARALLEL;
    String campaign = null;
    String report = null;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String value = null;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 0) {
        value = a.substring(eq + 1);
        a = a.substring(0, eq);
      }
      switch (a) {
        case "--url",
            "--user",
            "--password",
            "--seed",
            "--only",
            "--parallel",
            "--failover-command",
            "--failover-prepare-command",
            "--failover-stall-command",
            "--failover-replication",
            "--campaign",
            "--report" -> {
          if (value == null) {
            if (i + 1 >= args.length) {
              throw new IllegalArgumentException(a + " needs a value");
            }
            value = args[++i];
          }
          switch (a) {
            case "--url" -> url = value;
            case "--user" -> user = value;
            case "--password" -> password = value;
            case "--only" -> only = value;
            case "--failover-command" -> failoverCommand = value;
            case "--campaign" -> {
              Campaign.Goal.parse(value); // bad input now, not after the set-up
              campaign = value;
            }
            case "--report" -> report = value;
            case "--failover-prepare-command" -> failoverPrepare = value;
            case "--failover-stall-command" -> failoverStall = value;
            case "--failover-replication" -> {
              if (!value.equals("sync") && !value.equals("async")) {
                throw new IllegalArgumentException(
                    "--failover-replication takes sync or async, got " + value);
              }
              failoverReplication = value;
            }
            case "--parallel" -> {
              try {
                parallel = Integer.parseInt(value);
              } catch (NumberFormatException e) {
                parallel = 0;
              }
              if (parallel < 1 || parallel > 64) {
                throw new IllegalArgumentException(
                    "--parallel needs a whole number from 1 to 64, got " + value);
              }
            }
            default -> {
              try {
                seed = Long.parseLong(value);
              } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--seed needs a whole number, got " + value);
              }
            }
          }
        }
        case "--quick" -> size = Size.QUICK;
        case "--full" -> size = Size.FULL;
        case "--controls" -> controls = true;
        case "--help", "-h" -> help = true;
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (url != null && url.isBlank()) {
      url = null;
    }
    if (only != null) {
      checkIds(only, controls);
    }
    if ((failoverPrepare != null || failoverStall != null || failoverReplication != null)
        && failoverCommand == null) {
      throw new IllegalArgumentException(
          "--failover-prepare-command, --failover-stall-command and --failover-replication need"
              + " --failover-command");
    }
    if (report != null && campaign == null) {
      throw new IllegalArgumentException("--report needs --campaign");
    }
    if (campaign != null && controls) {
      throw new IllegalArgumentException(
          "--campaign runs the properties, and the negative controls once at its end: leave out"
              + " --controls");
    }
    if (failoverCommand != null && failoverCommand.isBlank()) {
      failoverCommand = null;
    }
    if (only != null
        && Arrays.stream(only.split(",")).map(String::trim).anyMatch("failover"::equals)
        && failoverCommand == null) {
      throw new IllegalArgumentException(
          "--only failover needs --failover-command: the runner cannot fail a database over by"
              + " itself");
    }
    return new Options(
        url,
        user,
        password,
        size,
        seed,
        only,
        controls,
        help,
        failoverCommand,
        failoverPrepare,
        failoverStall,
        failoverReplication,
        parallel,
        campaign,
        report);
  }

  /** These options with {@code --controls}: the campaign's last step. */
  Options withControls() {
    return new Options(
        url,
        user,
        password,
        size,
        seed,
        only,
        true,
        help,
        failoverCommand,
        failoverPrepare,
        failoverStall,
        failoverReplication,
        parallel,
        null,
        null);
  }

  /** Every id of {@code --only} must name a property (or, with --controls, a control). */
  private static void checkIds(String only, boolean controls) {
    List<String> ids =
        Arrays.stream(only.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    Set<String> known = new LinkedHashSet<>(propertyIds());
    if (controls) {
      known.addAll(controlIds());
    }
    List<String> unknown = new ArrayList<>();
    for (String id : ids) {
      if (!known.contains(id)) {
        unknown.add(id);
      }
    }
    if (ids.isEmpty() || !unknown.isEmpty()) {
      throw new IllegalArgumentException(
          (ids.isEmpty()
                  ? "--only names no property"
                  : "--only names "
                      + (unknown.size() == 1 ? "an unknown id: " : "unknown ids: ")
                      + unknown.stream().map(u -> "'" + u + "'").collect(Collectors.joining(", ")))
              + "; the properties are "
              + String.join(", ", propertyIds())
              + (controls
                  ? ", and the controls " + String.join(", ", controlIds())
                  : " (the controls' ids are known with --controls)"));
    }
  }
}
