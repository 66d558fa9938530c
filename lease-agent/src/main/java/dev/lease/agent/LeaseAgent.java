package dev.lease.agent;

import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import java.lang.instrument.Instrumentation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code -javaagent} entry point: {@code java
 * -javaagent:lease-agent.jar=mode=leader,lease=NAME, url=jdbc:...} (all keys in {@link
 * AgentConfig.Key} and the README).
 *
 * <p>Start-up, in order: parse and validate the configuration; weave the instrumentation; connect
 * to the lease database and check the lease table; start the mode (leader: the first claim is
 * attempted before the application's main runs). Any failure stops the JVM before the application
 * starts, with a message on stderr that says what is wrong: status {@value #EXIT_CONFIGURATION} for
 * bad configuration, {@value #EXIT_UNAVAILABLE} for a lease database that cannot be used. A
 * half-fenced application is the worst state to run in.
 */
public final class LeaseAgent {

  /** Exit status for bad configuration (sysexits EX_CONFIG). */
  static final int EXIT_CONFIGURATION = 78;

  /** Exit status for a lease database that is unreachable or unusable (sysexits EX_UNAVAILABLE). */
  static final int EXIT_UNAVAILABLE = 69;

  private LeaseAgent() {}

  public static void premain(String agentArgs, Instrumentation inst) {
    // Before any ByteBuddy class loads: its safe mode uses no sun.misc.Unsafe (Java 24+ warns on
    // stderr at the first use, JEP 498); the agent only inlines advice, which needs none of what
    // Unsafe enables. The shade plugin relocates this name with ByteBuddy's package.
    setIfAbsent("net.bytebuddy.safe", "true");
    java.util.Map<String, String> switches = TestingSwitches.set();
    if (!switches.isEmpty() && !TestingSwitches.isTestJvm()) {
      stop(
          EXIT_CONFIGURATION,
          "configuration error: test-only switches are set ("
              + TestingSwitches.describe(switches)
              + "): they weaken the fence on purpose and are honoured only in this project's test"
              + " JVMs (-D"
              + TestingSwitches.TEST_JVM
              + "=true with lease's test support on the class path); remove them");
      return;
    }
    AgentRules rules;
    try {
      rules = AgentRules.current(); // loaded here: a weakened one that cannot load stops the JVM
    } catch (ExceptionInInitializerError e) {
      stop(EXIT_CONFIGURATION, "configuration error: " + e.getCause().getMessage());
      return;
    }
    AgentConfig config;
    try {
      config = AgentConfig.parse(agentArgs, System::getenv);
    } catch (BadConfigurationException e) {
      stop(EXIT_CONFIGURATION, "configuration error: " + e.getMessage());
      return;
    }
    configureLogging(config.logLevel);
    Logger log = LoggerFactory.getLogger(LeaseAgent.class);
    log.info("starting: {}", config);
    if (!switches.isEmpty()) {
      log.error(
          "TEST JVM: the fence is weakened on purpose by {} (-D{}=true); never in production",
          TestingSwitches.describe(switches),
          TestingSwitches.TEST_JVM);
    }
    try {
      long t0 = System.nanoTime();
      ConnectionFencing.install(
          FencingAdapter.from(config), config.onUnfenced == AgentConfig.OnUnfenced.HALT);
      Instrumenter.install(inst, config);
      long t1 = System.nanoTime();
      LeaseDatabase database = new LeaseDatabase(config);
      LeaseManager.Builder leases =
          LeaseManager.builder(database)
              .table(config.table)
              .timings(config.timings)
              // halts the JVM (status 70) when the work under a lost lease does not stop
              .failurePolicy(new LostLeasePolicy());
      if (config.instance != null) {
        leases.instance(config.instance);
      }
      if (config.createTable) {
        leases.createTableIfMissing();
      }
      LeaseManager manager = rules.leaseManager(leases).build();
      long t2 = System.nanoTime();
      LeaderElection election =
          config.mode == AgentConfig.Mode.LEADER
              ? new LeaderElection(manager, config.leaseName, config.onLoss)
              : null;
      // Shutdown in lease-core's order: the election stops (no claim after it), the work under
      // every lease is stopped (interrupted, waited for up to the grace period: a configured
      // method, the leader's election thread), the leases are released (a replica takes over at
      // once), and the agent's lease connections are closed. Not a loss: nothing halts the JVM.
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    log.info("shutting down: releasing the leases of this process");
                    if (election != null) {
                      election.stop();
                      if (config.transferTo != null) {
                        election.transferTo(config.transferTo);
                      }
                    }
                    manager.close();
                    log.info("shutting down: leases released; closing the lease connections");
                    database.close();
                  },
                  "lease-agent-shutdown"));
      if (election != null) {
        election.start();
      } else {
        MethodLeases.install(manager);
      }
      log.info(
          "started on {} (lease table {}, instance {}): instrumentation {} ms, lease database"
              + " {} ms, mode {} ms",
          manager.databaseProduct(),
          manager.table(),
          manager.instance(),
          (t1 - t0) / 1_000_000,
          (t2 - t1) / 1_000_000,
          (System.nanoTime() - t2) / 1_000_000);
    } catch (IllegalArgumentException e) {
      stop(
          EXIT_CONFIGURATION,
          "configuration error: " + Secrets.redact(e.getMessage(), config.password));
    } catch (LeaseException e) {
      stop(
          EXIT_UNAVAILABLE,
          "the lease database cannot be used: "
              + Secrets.redact(agentAdvice(e.getMessage()), config.password));
    } catch (RuntimeException | LinkageError e) {
      stop(
          EXIT_UNAVAILABLE,
          "could not start: " + Secrets.redact(String.valueOf(e), config.password));
    }
  }

  /**
   * lease-core's advice for a missing table names its own API; an agent user sets a key instead.
   */
  static String agentAdvice(String message) {
    if (message == null) {
      return null;
    }
    int advice = message.indexOf("; create it with LeaseManager");
    if (message.contains("does not exist") && advice >= 0) {
      return message.substring(0, advice)
          + "; start the agent with create-table=true to create it, or create it with the DDL in"
          + " docs/leases.md (section \"The lease table\")";
    }
    return message;
  }

  /**
   * Stops the JVM with {@code message} on stderr. Halts rather than exits: this may run inside a
   * class transformer, where shutdown hooks could deadlock on class loading.
   */
  static void stop(int status, String message) {
    System.err.println("lease-agent: " + message);
    System.err.println(
        "lease-agent: stopping the JVM (status "
            + status
            + "): an application"
            + " that should be fenced must not run unfenced");
    System.err.flush();
    Runtime.getRuntime().halt(status);
  }

  /** The agent's slf4j is relocated (its own simple logger on stderr); these keys are its own. */
  private static void configureLogging(String level) {
    setIfAbsent("org.slf4j.simpleLogger.log.dev.lease", level);
    setIfAbsent("org.slf4j.simpleLogger.showDateTime", "true");
    setIfAbsent("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
    setIfAbsent("org.slf4j.simpleLogger.showShortLogName", "true");
  }

  private static void setIfAbsent(String key, String value) {
    if (System.getProperty(key) == null) {
      System.setProperty(key, value);
    }
  }
}
