package dev.lease.agent;

import dev.lease.testing.WeakenedFencesAllowed;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import legacy.LegacyApp;

/**
 * The legacy application in a child JVM: {@code java [-javaagent:lease-agent.jar=ARGS] -cp ...
 * legacy.LegacyApp ...}. Its class path holds only the application's own jars (HikariCP, the JDBC
 * drivers, slf4j) and the test classes, so the agent's classes come from the agent jar alone.
 */
final class AppProcess implements AutoCloseable {

  static final String JAVA_17 = Path.of(System.getProperty("java.home"), "bin", "java").toString();
  static final String JAVA_25 = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java";
  static final Duration TIMEOUT = Duration.ofSeconds(60);

  private static final Pattern APP_JARS =
      Pattern.compile(
          ".*(HikariCP|postgresql|mariadb-java-client|sqlite-jdbc|slf4j-api|slf4j-simple|"
              + "commons-dbcp2|commons-pool2|commons-logging|jakarta.transaction-api|tomcat-jdbc|"
              + "tomcat-juli|c3p0|mchange-commons-java|agroal-api|agroal-pool|ucp11|ojdbc11|"
              + "mysql-connector-j|protobuf-java)-[0-9][^"
              + Pattern.quote(File.separator)
              + "]*\\.jar");

  private static final String TESTING = "lease.agent.testing.";

  /** lease-jdbc and lease-core as the reactor hands them to the tests: jars or classes folders. */
  private static final Pattern LEASE_JARS = Pattern.compile(".*lease-(jdbc|core)([-/\\\\].*)?");

  private final Process process;
  private final String label;
  private final List<String> out = new ArrayList<>();
  private final StringBuilder err = new StringBuilder();
  private final Writer stdin;
  private final List<Thread> pumps = new ArrayList<>();

  private AppProcess(Process process, String label) {
    this.process = process;
    this.label = label;
    this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    pumps.add(
        pump(
            process.getInputStream(),
            line -> {
              synchronized (this) {
                out.add(line);
                notifyAll();
              }
            },
            label + "-out"));
    pumps.add(
        pump(
            process.getErrorStream(),
            line -> {
              synchronized (this) {
                err.append(line).append('\n');
                notifyAll();
              }
            },
            label + "-err"));
  }

  /** The agent jar built by this module (failsafe passes it; run the tests with mvn verify). */
  static String agentJar() {
    String jar = System.getProperty("lease.agent.jar", "target/lease-agent.jar");
    if (!Files.isRegularFile(Path.of(jar))) {
      throw new IllegalStateException(
          jar
              + " does not exist; run the agent tests with `mvn verify`"
              + " (failsafe runs them after the shaded jar is packaged)");
    }
    return Path.of(jar).toAbsolutePath().toString();
  }

  /**
   * Starts the legacy application.
   *
   * @param agentArgs null to run without the agent
   */
  static AppProcess start(String label, String java, String agentArgs, String... appArgs) {
    return start(label, java, agentArgs, Map.of(), appArgs);
  }

  static AppProcess start(
      String label, String java, String agentArgs, Map<String, String> env, String... appArgs) {
    return start(label, java, agentArgs, env, List.of(), false, LegacyApp.class.getName(), appArgs);
  }

  /**
   * The general form.
   *
   * @param jvmOptions more JVM options, before the main class
   * @param withLeaseJdbc also put lease-jdbc and lease-core on the class path (an application that
   *     uses lease-jdbc itself)
   */
  static AppProcess start(
      String label,
      String java,
      String agentArgs,
      Map<String, String> env,
      List<String> jvmOptions,
      boolean withLeaseJdbc,
      String mainClass,
      String... appArgs) {
    List<String> cmd = new ArrayList<>();
    cmd.add(java);
    if (agentArgs != null) {
      cmd.add("-javaagent:" + agentJar() + "=" + agentArgs);
    }
    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
    // a test JVM: the agent honours the negative controls' switches (lease.agent.testing.*) only
    // with this marker (a later -Dlease.agent.testJvm=false in jvmOptions wins)
    cmd.add("-Dlease.agent.testJvm=true");
    cmd.addAll(jvmOptions);
    // the agent's switches are read by the weakened rules of the tests, which the agent loads in
    // place of its own only when named (the class is in this module's test classes, on the class
    // path below, never in the agent jar)
    if (jvmOptions.stream().anyMatch(o -> o.startsWith("-D" + TESTING))
        && jvmOptions.stream().noneMatch(o -> o.startsWith("-D" + TestingSwitches.RULES + "="))) {
      cmd.add("-D" + TestingSwitches.RULES + "=" + WeakenedRules.class.getName());
    }
    cmd.add("-cp");
    cmd.add(classPath(withLeaseJdbc));
    cmd.add(mainClass);
    cmd.addAll(Arrays.asList(appArgs));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().keySet().removeIf(k -> k.startsWith("LEASE_AGENT_"));
    pb.environment().putAll(env);
    try {
      return new AppProcess(pb.start(), label);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static String classPath(boolean withLeaseJdbc) {
    String testPath =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> cp = new ArrayList<>();
    cp.add(location(LegacyApp.class));
    // lease's test support: its marker class lets the agent honour the negative controls' switches
    // (with -Dlease.agent.testJvm=true; TestingSwitches), as it lets lease-jdbc's weakenings
    cp.add(location(WeakenedFencesAllowed.class));
    for (String entry : testPath.split(File.pathSeparator)) {
      if (APP_JARS.matcher(entry).matches()
          || (withLeaseJdbc && LEASE_JARS.matcher(entry).matches())) {
        cp.add(entry);
      }
    }
    return String.join(File.pathSeparator, cp);
  }

  private static String location(Class<?> c) {
    try {
      return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Thread pump(
      InputStream in, java.util.function.Consumer<String> sink, String name) {
    Thread t =
        new Thread(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                  sink.accept(line);
                }
              } catch (IOException e) {
                // the process ended
              }
            },
            name);
    t.setDaemon(true);
    t.start();
    return t;
  }

  long pid() {
    return process.pid();
  }

  void send(String line) {
    try {
      stdin.write(line + "\n");
      stdin.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(label + " does not read its input: " + describe(), e);
    }
  }

  /** kill -STOP: the process is paused as a whole (GC pause, VM freeze, SIGSTOP in the wild). */
  void pause() {
    signal("STOP");
  }

  void resume() {
    signal("CONT");
  }

  /**
   * SIGTERM: the JVM shuts down, its shutdown hooks run (the agent's among them). Sent with kill,
   * not Process.destroy(), which also closes the pipes and so loses what the hooks print.
   */
  void terminate() {
    signal("TERM");
  }

  private void signal(String sig) {
    try {
      Process kill =
          new ProcessBuilder("kill", "-" + sig, Long.toString(pid())).inheritIO().start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + sig + " " + pid() + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  synchronized List<String> lines() {
    return List.copyOf(out);
  }

  synchronized String stderr() {
    return err.toString();
  }

  /**
   * Waits for a stdout line matching {@code p} at index {@code from} or later; returns its index.
   */
  synchronized int awaitLine(int from, Predicate<String> p, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + TIMEOUT.toNanos();
    while (true) {
      for (int i = from; i < out.size(); i++) {
        if (p.test(out.get(i))) {
          return i;
        }
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError(
            label + ": no " + what + " within " + TIMEOUT.toSeconds() + " s; " + describe());
      }
      if (!process.isAlive() && from >= out.size()) {
        // give the pumps a moment to deliver the last lines, then fail
        wait(100);
        if (out.stream().skip(from).noneMatch(p)) {
          throw new AssertionError(
              label
                  + " ended (status "
                  + process.exitValue()
                  + ") without "
                  + what
                  + "; "
                  + describe());
        }
      }
      TimeUnit.NANOSECONDS.timedWait(this, Math.min(left, TimeUnit.MILLISECONDS.toNanos(200)));
    }
  }

  /** Waits until stderr, from character {@code from} on, contains {@code text}; returns where. */
  synchronized int awaitStderr(int from, String text, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TIMEOUT.toNanos();
    int at;
    while ((at = err.indexOf(text, from)) < 0) {
      long left = deadline - System.nanoTime();
      if (left <= 0 || !process.isAlive()) {
        throw new AssertionError(
            label + ": no " + what + " within " + TIMEOUT.toSeconds() + " s; " + describe());
      }
      TimeUnit.NANOSECONDS.timedWait(this, Math.min(left, TimeUnit.MILLISECONDS.toNanos(200)));
    }
    return at;
  }

  synchronized int stderrLength() {
    return err.length();
  }

  int awaitLine(Predicate<String> p, String what) throws InterruptedException {
    return awaitLine(0, p, what);
  }

  /** Waits for the process to end; returns its exit status. */
  int awaitExit() throws InterruptedException {
    if (!process.waitFor(TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
      throw new AssertionError(
          label + " did not end within " + TIMEOUT.toSeconds() + " s; " + describe());
    }
    for (Thread pump : pumps) {
      pump.join(TimeUnit.SECONDS.toMillis(10)); // the pumps end at the end of the streams
    }
    return process.exitValue();
  }

  String describe() {
    List<String> lines = lines();
    String tail =
        lines.stream().skip(Math.max(0, lines.size() - 15)).collect(Collectors.joining("\n  "));
    return "\n stdout (last lines):\n  " + tail + "\n stderr:\n" + stderr();
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      process.destroyForcibly(); // SIGKILL ends a stopped process too
      try {
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
