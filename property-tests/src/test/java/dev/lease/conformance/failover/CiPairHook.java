package dev.lease.conformance.failover;

import dev.lease.conformance.Target;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The CI's replicated pair ({@code .ci/replicas}) as a failover hook, for one replication mode.
 *
 * <p>The killed PostgreSQL node is rebuilt as the new primary's replica ({@code pg-rejoin}) in the
 * background as soon as the failover returns (a MariaDB node at the next prepare: see {@link
 * #failOver}), while the round's holders wait out the lease on the promoted server and its checks
 * run: the next round's {@link #prepare} first waits for that rebuild (it was a second or more of
 * every round's set-up, more on a loaded machine), then checks the pair as before ({@code
 * pg-prepare} / {@code my-prepare}: healthy, the mode in effect, a rebuild done there if the
 * background one failed). The rebuilt node is not part of the round: the checks read the promoted
 * server's own history. {@link #close} waits for a rebuild still under way, so the next user of the
 * pair finds it idle.
 *
 * <p>MariaDB Connector/J's sequential mode tries hosts in order and does not look for the writable
 * one: each round lists the pair's current primary (from the prepare's {@code primary=} line)
 * first. pgjdbc finds the primary itself ({@code targetServerType=primary}).
 */
final class CiPairHook implements FailoverHook, AutoCloseable {

  private final String script;
  private final String prefix;
  private final String mode;
  private final String[] ports;
  private CompletableFuture<String> rejoin;
  private String primary;

  CiPairHook(String script, boolean postgres, String mode, String[] ports) {
    this.script = script;
    this.prefix = postgres ? "pg" : "my";
    this.mode = mode;
    this.ports = ports;
  }

  @Override
  public void prepare() throws IOException {
    long started = System.nanoTime();
    awaitRejoin();
    if (Boolean.getBoolean("lease.failover.log")) {
      System.out.println(
          "failover: waited " + (System.nanoTime() - started) / 1_000_000 + " ms for the rejoin");
    }
    primary = values(run(prefix + "-prepare", mode)).get("primary");
  }

  @Override
  public void settle() throws IOException {
    run(prefix + "-sync");
  }

  @Override
  public void stall() throws IOException {
    run(prefix + "-stall");
  }

  @Override
  public void failOver() throws IOException {
    run(prefix + "-failover");
    if (!prefix.equals("pg")) {
      // MariaDB: the next prepare rebuilds the killed node. Rebuilt now, it would come back on its
      // port while the round still runs, without the round's tables, and Connector/J's sequential
      // URL, which lists it first for this round, would connect to it ("table doesn't exist":
      // seen in CI). pgjdbc connects to the primary only (targetServerType=primary).
      return;
    }
    CompletableFuture<String> r = new CompletableFuture<>();
    rejoin = r;
    Thread t =
        new Thread(
            () -> {
              try {
                r.complete(run(prefix + "-rejoin", mode));
              } catch (IOException | RuntimeException e) {
                r.completeExceptionally(e);
              }
            },
            "failover-rejoin");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public Target target(Target configured) {
    if (prefix.equals("pg")) {
      return configured;
    }
    String first = primary != null ? primary : ports[0];
    String second = first.equals(ports[0]) ? ports[1] : ports[0];
    return new Target(
        "jdbc:mariadb:sequential://127.0.0.1:"
            + first
            + ",127.0.0.1:"
            + second
            + "/test?connectTimeout=5000",
        configured.user(),
        configured.password());
  }

  @Override
  public String describe() {
    return "failover command '" + script + " " + prefix + "-failover'";
  }

  /** Waits for the background rebuild (at most 180 s); one that failed is redone by prepare. */
  @Override
  public void close() {
    try {
      awaitRejoin();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private void awaitRejoin() throws IOException {
    CompletableFuture<String> r = rejoin;
    rejoin = null;
    if (r == null) {
      return;
    }
    try {
      r.get(180, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      // the prepare that follows finds no replica and rebuilds it itself; say why here
      System.out.println("failover: background " + prefix + "-rejoin failed: " + e.getCause());
    } catch (TimeoutException e) {
      throw new IOException(prefix + "-rejoin did not finish within 180 s", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while waiting for " + prefix + "-rejoin", e);
    }
  }

  /** Runs the script with {@code args} (at most 120 s); its output, or why it failed. */
  private String run(String... args) throws IOException {
    List<String> command = new java.util.ArrayList<>();
    command.add(script);
    command.addAll(List.of(args));
    long started = System.nanoTime();
    Process p =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    try {
      if (!p.waitFor(120, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException("'" + String.join(" ", command) + "' did not finish within 120 s");
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while running '" + String.join(" ", command) + "'", e);
    }
    if (Boolean.getBoolean("lease.failover.log")) {
      System.out.println(
          "failover: "
              + String.join(" ", args)
              + " took "
              + (System.nanoTime() - started) / 1_000_000
              + " ms");
    }
    if (p.exitValue() != 0) {
      throw new IOException(
          "'"
              + String.join(" ", command)
              + "' exited with status "
              + p.exitValue()
              + ": "
              + out.strip());
    }
    return out;
  }

  /** The key=value lines of a command's output. */
  static Map<String, String> values(String out) {
    Map<String, String> m = new HashMap<>();
    for (String line : out.split("\n")) {
      int eq = line.indexOf('=');
      if (eq > 0 && !line.startsWith("replicas:")) {
        m.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
      }
    }
    return m;
  }
}
