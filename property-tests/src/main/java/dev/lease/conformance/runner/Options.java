package dev.lease.conformance.runner;

import dev.lease.conformance.Size;
import java.util.Map;

/** The runner's command line, with LEASE_URL / LEASE_USER / LEASE_PASSWORD as fallbacks. */
record Options(
    String url, String user, String password, Size size, Long seed, String only, boolean help) {

  static final String USAGE =
      String.join(
          "\n",
          "usage: java -jar lease-conformance.jar [--url JDBC_URL] [--user USER] [--password PASSWORD]",
          "                                      [--quick | --full] [--seed N] [--only ID[,ID...]]",
          "",
          "Checks the lease protocol's invariants against a database and prints a table of",
          "property x database x result. Exit status: 0 every property holds, 1 a property does not",
          "hold, 2 bad input (unreachable or unsupported database, no permission to create tables).",
          "",
          "  (no --url)     an embedded SQLite database in a temporary directory, removed afterwards",
          "  --url          jdbc:postgresql://..., jdbc:mysql://..., jdbc:mariadb://... or jdbc:sqlite:...",
          "                 (environment: LEASE_URL); the user needs CREATE and DROP TABLE: the run makes",
          "                 its own tables (prefix lc_<random>_) and drops them afterwards",
          "  --user, --password   (environment: LEASE_USER, LEASE_PASSWORD)",
          "  --quick        the CI size (default); --full tries many more schedules",
          "  --seed N       replays the schedules of a previous run (a failure prints its seed)",
          "  --only IDS     checks only these properties (ids as in the table)");

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
    boolean help = false;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String value = null;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 0) {
        value = a.substring(eq + 1);
        a = a.substring(0, eq);
      }
      switch (a) {
        case "--url", "--user", "--password", "--seed", "--only" -> {
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
        case "--help", "-h" -> help = true;
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (url != null && url.isBlank()) {
      url = null;
    }
    return new Options(url, user, password, size, seed, only, help);
  }
}
