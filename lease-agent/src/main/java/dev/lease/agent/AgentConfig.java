package dev.lease.agent;

import dev.lease.core.LeaseTimings;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The agent's configuration: parsed from the agent arguments ({@code key=value,...}), an optional
 * properties file ({@code config=PATH}) and the environment, then validated as a whole. Every key
 * is a {@link Key}; docs/agent.md's table lists the same keys.
 *
 * <p>Precedence: agent arguments, then the file, then the environment ({@code LEASE_AGENT_URL},
 * {@code LEASE_AGENT_USER}, {@code LEASE_AGENT_PASSWORD}). {@link #toString()} never shows the
 * password.
 */
final class AgentConfig {

  /** How the process's work is bound to leases. */
  enum Mode {
    /** One named lease for the whole process; every transaction is fenced by it. */
    LEADER,
    /** Configured methods run under named leases, claimed on entry, skipped when held elsewhere. */
    METHODS
  }

  /** How fenced transactions verify (lease-jdbc's fencing modes). */
  enum Fencing {
    STRICT,
    VERIFY
  }

  /** Leader mode: what the process does after it lost its lease. */
  enum OnLoss {
    /** Halt the JVM (status 70) after the grace period: a lost leader stops, as lease-core's. */
    HALT,
    /** Keep running with every transaction refused, and claim the lease again when it is free. */
    REFUSE
  }

  /** What the agent does when a JDBC class or a connection would run unfenced. */
  enum OnUnfenced {
    /** Stop the JVM with status 78, as for bad configuration (the default). */
    HALT,
    /** Log an error and run on: the operator accepts the risk. */
    LOG
  }

  /** Every configuration key, with what it means; docs/agent.md lists the same. */
  enum Key {
    CONFIG("config", "path of a properties file with any of these keys (agent arguments win)"),
    MODE("mode", "leader or methods (required)"),
    URL(
        "url",
        "JDBC URL of the lease database; the lease table must live in the database the"
            + " application writes to (fencing runs inside its transactions); env LEASE_AGENT_URL"),
    USER("user", "user of the lease database; env LEASE_AGENT_USER"),
    PASSWORD(
        "password",
        "password of the lease database (never logged); prefer env" + " LEASE_AGENT_PASSWORD"),
    TABLE("table", "lease table, a plain SQL identifier, optionally schema.table (default leases)"),
    CREATE_TABLE(
        "create-table",
        "true: create the lease table at start if it is missing" + " (default false)"),
    INSTANCE("instance", "name of this process in the lease row, for humans (default host/pid)"),
    LEASE("lease", "leader mode: the name of the process-wide lease (required in leader mode)"),
    METHODS(
        "methods",
        "methods mode: class#method=lease entries separated by ';', e.g."
            + " com.acme.Jobs#nightly=billing;com.acme.Jobs#hourly=reports (required in methods mode)"),
    FENCING("fencing", "strict or verify (default strict): lease-jdbc's fencing mode"),
    LEASE_DURATION(
        "lease-duration",
        "how long the database keeps a lease without renewal"
            + " (default 15s); setting only this scales the other timings with it"),
    RENEW_INTERVAL(
        "renew-interval",
        "renewal cadence, also the poll interval of a waiting"
            + " leader (default lease-duration × 2/15)"),
    ATTEMPT_TIMEOUT(
        "attempt-timeout",
        "bound of one claim or renewal attempt" + " (default lease-duration / 3)"),
    LOCAL_DEADLINE(
        "local-deadline",
        "the holder gives the lease up this long after its last"
            + " successful renewal started (default lease-duration × 2/3)"),
    GRACE_PERIOD(
        "grace-period",
        "methods mode: time a method has to return after its lease was lost and its thread"
            + " interrupted (then the JVM halts), and at shutdown before its lease is released"
            + " anyway; leader mode with on-loss=halt: time before the JVM halts after a loss"
            + " (default lease-duration / 3)"),
    ON_LOSS(
        "on-loss",
        "leader mode: halt (the JVM halts with status 70 after the grace period once the lease is"
            + " lost; default) or refuse (run on with every transaction refused and claim again)"),
    TRANSFER_TO(
        "transfer-to",
        "leader mode: at a graceful shutdown, hand the lease to the process with this instance"
            + " (the successor's instance=) instead of releasing it; the successor adopts it at its"
            + " next poll and no other replica can take it in between (default: release)"),
    ON_UNFENCED(
        "on-unfenced",
        "halt (default: stop the JVM with status 78 when a JDBC class cannot be instrumented or a"
            + " pool-internals entry hides the application's connections) or log (accept the risk:"
            + " log an error and run on)"),
    POOL_INTERNALS(
        "pool-internals",
        "extra class#method entries, ';'-separated, inside which connections are never fenced: the"
            + " method where a connection pool opens its physical connections (HikariCP, DBCP2, Tomcat"
            + " JDBC, c3p0, Agroal and Oracle UCP are built in)"),
    LOG_LEVEL(
        "log-level",
        "the agent's log level on stderr: error, warn, info, debug" + " (default info)");

    final String name;
    final String description;

    Key(String name, String description) {
      this.name = name;
      this.description = description;
    }

    static Optional<Key> named(String name) {
      return Arrays.stream(values()).filter(k -> k.name.equals(name)).findFirst();
    }

    static String allNames() {
      return Arrays.stream(values()).map(k -> k.name).collect(Collectors.joining(", "));
    }
  }

  private static final Pattern DURATION = Pattern.compile("(\\d{1,10})\\s*(ms|s|m)?");

  /** Splits arguments at commas that start a new {@code key=}; commas inside values survive. */
  private static final Pattern ARG_SEPARATOR = Pattern.compile(",(?=\\s*[a-z][a-z-]*=)");

  private static final Pattern LOG_LEVELS = Pattern.compile("error|warn|info|debug|trace");

  final Mode mode;
  final String url;
  final String user;
  final String password;
  final String table;
  final boolean createTable;
  final String instance;
  final String leaseName;
  final List<MethodSpec> methods;
  final Fencing fencing;
  final LeaseTimings timings;
  final List<MethodSpec> poolInternals;
  final String logLevel;
  final OnLoss onLoss;

  /** Leader mode: the successor's instance a graceful shutdown hands the lease to, or null. */
  final String transferTo;

  final OnUnfenced onUnfenced;

  private AgentConfig(Map<Key, String> v) {
    this.mode = parseMode(v.get(Key.MODE));
    this.url =
        required(
            v,
            Key.URL,
            "set url=jdbc:... in the agent arguments or the config file,"
                + " or the environment variable LEASE_AGENT_URL");
    this.user = v.get(Key.USER);
    this.password = v.get(Key.PASSWORD);
    if (!url.startsWith("jdbc:")) {
      throw new BadConfigurationException(
          "url '"
              + Secrets.redactUrl(url)
              + "' is not a JDBC URL; it must start with jdbc: (for example"
              + " jdbc:postgresql://db:5432/app)");
    }
    this.table = v.getOrDefault(Key.TABLE, "leases");
    this.createTable = parseBoolean(Key.CREATE_TABLE, v.getOrDefault(Key.CREATE_TABLE, "false"));
    this.instance = v.get(Key.INSTANCE);
    this.fencing = parseEnum(Key.FENCING, v.getOrDefault(Key.FENCING, "strict"), Fencing.class);
    this.timings = parseTimings(v);
    String pools = v.get(Key.POOL_INTERNALS);
    this.poolInternals = pools == null || pools.isBlank() ? List.of() : parsePoolInternals(pools);
    this.onUnfenced =
        parseEnum(Key.ON_UNFENCED, v.getOrDefault(Key.ON_UNFENCED, "halt"), OnUnfenced.class);
    this.logLevel = v.getOrDefault(Key.LOG_LEVEL, "info").toLowerCase(Locale.ROOT);
    if (!LOG_LEVELS.matcher(logLevel).matches()) {
      throw new BadConfigurationException(
          "log-level '" + logLevel + "' is not one of error, warn, info, debug, trace");
    }
    if (mode == Mode.LEADER) {
      this.leaseName =
          required(
              v,
              Key.LEASE,
              "leader mode needs the name of the process-wide"
                  + " lease, for example lease=billing-leader; every replica of the application uses the same"
                  + " name");
      checkLeaseName("lease", leaseName);
      if (v.containsKey(Key.METHODS)) {
        throw new BadConfigurationException(
            "methods is a key of methods mode, but mode is leader;"
                + " remove methods, or set mode=methods (and remove lease)");
      }
      this.methods = List.of();
      this.onLoss = parseEnum(Key.ON_LOSS, v.getOrDefault(Key.ON_LOSS, "halt"), OnLoss.class);
      this.transferTo = v.get(Key.TRANSFER_TO);
      if (transferTo != null
          && (transferTo.isBlank() || transferTo.codePointCount(0, transferTo.length()) > 128)) {
        throw new BadConfigurationException(
            "transfer-to must name the successor's instance (1 to 128 characters), got '"
                + transferTo
                + "'");
      }
    } else {
      if (v.containsKey(Key.TRANSFER_TO)) {
        throw new BadConfigurationException(
            "transfer-to is a key of leader mode, but mode is methods; a method's lease is"
                + " released at shutdown");
      }
      this.transferTo = null;
      if (v.containsKey(Key.ON_LOSS)) {
        throw new BadConfigurationException(
            "on-loss is a key of leader mode, but mode is methods; a method whose lease is lost is"
                + " interrupted and the JVM halts after grace-period if it does not stop");
      }
      this.onLoss = OnLoss.HALT;
      this.methods =
          MethodSpec.parseAll(
              required(
                  v,
                  Key.METHODS,
                  "methods mode needs the methods"
                      + " to run under leases, for example methods=com.acme.Jobs#nightly=billing"));
      if (v.containsKey(Key.LEASE)) {
        throw new BadConfigurationException(
            "lease is a key of leader mode, but mode is methods;"
                + " name each method's lease in methods=class#method=lease instead");
      }
      this.leaseName = null;
    }
  }

  /**
   * Parses and validates the configuration.
   *
   * @param agentArgs the string after {@code -javaagent:lease-agent.jar=}, may be null
   * @param env the environment (System.getenv() in production)
   * @throws BadConfigurationException saying what is wrong and how to fix it
   */
  static AgentConfig parse(String agentArgs, Function<String, String> env) {
    Map<Key, String> args = parseArguments(agentArgs);
    Map<Key, String> merged = new LinkedHashMap<>();
    String file = args.get(Key.CONFIG);
    if (file != null) {
      merged.putAll(readFile(file));
    }
    merged.putAll(args);
    merged.remove(Key.CONFIG);
    fromEnv(merged, Key.URL, env.apply("LEASE_AGENT_URL"));
    fromEnv(merged, Key.USER, env.apply("LEASE_AGENT_USER"));
    fromEnv(merged, Key.PASSWORD, env.apply("LEASE_AGENT_PASSWORD"));
    return new AgentConfig(merged);
  }

  private static void fromEnv(Map<Key, String> v, Key key, String value) {
    if (!v.containsKey(key) && value != null && !value.isEmpty()) {
      v.put(key, value);
    }
  }

  static Map<Key, String> parseArguments(String agentArgs) {
    Map<Key, String> v = new LinkedHashMap<>();
    if (agentArgs == null || agentArgs.isBlank()) {
      return v;
    }
    for (String pair : ARG_SEPARATOR.split(agentArgs.trim())) {
      if (pair.isBlank()) {
        continue;
      }
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        throw new BadConfigurationException(
            "agent argument '"
                + Secrets.redactArgument(pair)
                + "' is not key=value; pass -javaagent:lease-agent.jar=mode=leader,lease=NAME,url=..."
                + " (keys: "
                + Key.allNames()
                + ")");
      }
      put(v, pair.substring(0, eq).trim(), pair.substring(eq + 1).trim(), "agent arguments");
    }
    return v;
  }

  private static Map<Key, String> readFile(String file) {
    Properties p = new Properties();
    try (InputStream in = Files.newInputStream(Path.of(file))) {
      p.load(in);
    } catch (NoSuchFileException e) {
      throw new BadConfigurationException(
          "config file "
              + file
              + " does not exist; fix config=PATH"
              + " (relative paths are resolved against the working directory "
              + Path.of("").toAbsolutePath()
              + ")");
    } catch (IOException | RuntimeException e) {
      throw new BadConfigurationException("config file " + file + " cannot be read: " + e);
    }
    Map<Key, String> v = new LinkedHashMap<>();
    for (String name : p.stringPropertyNames()) {
      if (name.equals(Key.CONFIG.name)) {
        throw new BadConfigurationException(
            "config file "
                + file
                + " sets config; a config file"
                + " cannot include another, remove that line");
      }
      put(v, name.trim(), p.getProperty(name).trim(), "config file " + file);
    }
    return v;
  }

  private static void put(Map<Key, String> v, String name, String value, String where) {
    Key key =
        Key.named(name)
            .orElseThrow(
                () ->
                    new BadConfigurationException(
                        "unknown key '"
                            + name
                            + "' in the "
                            + where
                            + "; known keys: "
                            + Key.allNames()));
    if (v.put(key, value) != null) {
      throw new BadConfigurationException("key '" + name + "' is given twice in the " + where);
    }
  }

  private static Mode parseMode(String value) {
    if (value == null || value.isBlank()) {
      throw new BadConfigurationException(
          "mode is missing; set mode=leader (one lease for the whole"
              + " process) or mode=methods (leases for configured methods)");
    }
    try {
      return Mode.valueOf(value.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new BadConfigurationException(
          "unknown mode '" + value + "'; mode must be leader or" + " methods");
    }
  }

  private static String required(Map<Key, String> v, Key key, String howToFix) {
    String value = v.get(key);
    if (value == null || value.isBlank()) {
      throw new BadConfigurationException("missing " + key.name + ": " + howToFix);
    }
    return value;
  }

  private static boolean parseBoolean(Key key, String value) {
    switch (value.toLowerCase(Locale.ROOT)) {
      case "true":
        return true;
      case "false":
        return false;
      default:
        throw new BadConfigurationException(key.name + " '" + value + "' must be true or false");
    }
  }

  private static <E extends Enum<E>> E parseEnum(Key key, String value, Class<E> type) {
    try {
      return Enum.valueOf(type, value.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new BadConfigurationException(
          key.name
              + " '"
              + value
              + "' must be one of "
              + Arrays.stream(type.getEnumConstants())
                  .map(c -> c.name().toLowerCase(Locale.ROOT))
                  .collect(Collectors.joining(", ")));
    }
  }

  /**
   * Timings: any key not given derives from lease-duration in the proportions of the defaults (15 s
   * lease: renew 2 s, attempt 5 s, local deadline 10 s, grace 5 s), so {@code lease-duration=2s}
   * alone is a consistent set. LeaseTimings then checks the relations and names the broken one.
   */
  private static LeaseTimings parseTimings(Map<Key, String> v) {
    Duration lease = duration(v, Key.LEASE_DURATION).orElse(Duration.ofSeconds(15));
    try {
      // lease-core's derivation, so the agent, the starter and LeaseTimings.of agree
      LeaseTimings.Builder b = LeaseTimings.builderFor(lease);
      duration(v, Key.RENEW_INTERVAL).ifPresent(b::renewInterval);
      duration(v, Key.ATTEMPT_TIMEOUT).ifPresent(b::attemptTimeout);
      duration(v, Key.LOCAL_DEADLINE).ifPresent(b::localDeadline);
      duration(v, Key.GRACE_PERIOD).ifPresent(b::gracePeriod);
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new BadConfigurationException(
          "timings are inconsistent: "
              + e.getMessage()
              + " (keys lease-duration, renew-interval, attempt-timeout, local-deadline, grace-period)");
    }
  }

  private static Optional<Duration> duration(Map<Key, String> v, Key key) {
    String value = v.get(key);
    if (value == null) {
      return Optional.empty();
    }
    Matcher m = DURATION.matcher(value.trim());
    if (!m.matches()) {
      throw new BadConfigurationException(
          key.name
              + " '"
              + value
              + "' is not a duration; write"
              + " for example 2s, 500ms or 1m (a bare number is milliseconds)");
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "ms" : m.group(2);
    switch (unit) {
      case "s":
        return Optional.of(Duration.ofSeconds(n));
      case "m":
        return Optional.of(Duration.ofMinutes(n));
      default:
        return Optional.of(Duration.ofMillis(n));
    }
  }

  private static List<MethodSpec> parsePoolInternals(String value) {
    List<MethodSpec> specs = new ArrayList<>();
    for (String raw : value.split(";")) {
      String entry = raw.trim();
      if (entry.isEmpty()) {
        continue;
      }
      // reuse the method spec syntax with a placeholder lease name
      try {
        specs.add(MethodSpec.parseAll(entry + "=pool").get(0));
      } catch (BadConfigurationException e) {
        throw new BadConfigurationException(
            "bad pool-internals entry '"
                + entry
                + "': expected"
                + " class#method, for example org.apache.commons.dbcp2.PoolableConnectionFactory"
                + "#makeObject");
      }
    }
    return List.copyOf(specs);
  }

  /** Lease names: what lease-core accepts (not empty, at most 128 characters, no control chars). */
  static void checkLeaseName(String where, String name) {
    if (name == null || name.isBlank()) {
      throw new BadConfigurationException(where + ": the lease name is empty");
    }
    if (name.codePointCount(0, name.length()) > 128) {
      throw new BadConfigurationException(where + ": the lease name is longer than 128 characters");
    }
    if (name.chars().anyMatch(Character::isISOControl)) {
      throw new BadConfigurationException(where + ": the lease name contains control characters");
    }
  }

  @Override
  public String toString() {
    StringBuilder s =
        new StringBuilder("mode=")
            .append(mode.name().toLowerCase(Locale.ROOT))
            .append(", url=")
            .append(Secrets.redactUrl(url))
            .append(", user=")
            .append(user == null ? "(none)" : user)
            .append(", password=")
            .append(password == null ? "(none)" : "****")
            .append(", table=")
            .append(table)
            .append(", create-table=")
            .append(createTable)
            .append(", fencing=")
            .append(fencing.name().toLowerCase(Locale.ROOT))
            .append(", ")
            .append(timings);
    s.append(", on-unfenced=").append(onUnfenced.name().toLowerCase(Locale.ROOT));
    if (mode == Mode.LEADER) {
      s.append(", lease=").append(leaseName);
      s.append(", on-loss=").append(onLoss.name().toLowerCase(Locale.ROOT));
    } else {
      s.append(", methods=")
          .append(
              methods.stream()
                  .map(m -> m.key() + "=" + m.leaseName())
                  .collect(Collectors.joining(";")));
    }
    return s.toString();
  }
}
