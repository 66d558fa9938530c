package dev.lease.conformance.failover;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * How a failover run fails the database over: the user's own HA tooling (the runner's {@code
 * --failover-command}) or the CI's replicated pairs ({@code .ci/replicas}). Every step blocks until
 * it is done; a failing step throws, and the round is reported as not run, never as a pass.
 */
public interface FailoverHook {

  /**
   * Before each round: the pair is healthy, a replica is following the primary (the CI re-creates
   * the dead node as a replica of the new primary). Nothing by default: a user's HA rejoins on its
   * own.
   */
  default void prepare() throws IOException {}

  /**
   * After the round made its tables, before its holders start: wait until the replica has what the
   * primary has, so that an asynchronous failover cannot lose the tables themselves (the round
   * could not run on the promoted server). Nothing by default: a user's HA is checked as it is.
   */
  default void settle() throws IOException {}

  /**
   * Right before the moment chosen for the failover: stop shipping changes to the replica, so
   * whatever commits from now on is lost (asynchronous replication) or waits (synchronous). Nothing
   * by default.
   */
  default void stall() throws IOException {}

  /**
   * The database to use for the next round, after {@link #prepare}: the configured one by default.
   * The CI's MariaDB hook lists the current primary first, as MariaDB Connector/J's sequential mode
   * tries hosts in order and keeps a failed host on a deny list for a while.
   */
  default dev.lease.conformance.Target target(dev.lease.conformance.Target configured)
      throws IOException {
    return configured;
  }

  /** Kills the primary and promotes the replica; returns once the new primary takes writes. */
  void failOver() throws IOException;

  /** What this hook runs, for the report. */
  String describe();

  /** Runs {@code sh -c} commands: each step's command, or none for a step without one. */
  static FailoverHook commands(String prepare, String stall, String failOver) {
    return new FailoverHook() {
      @Override
      public void prepare() throws IOException {
        run(prepare);
      }

      @Override
      public void stall() throws IOException {
        run(stall);
      }

      @Override
      public void failOver() throws IOException {
        run(failOver);
      }

      @Override
      public String describe() {
        return "failover command '" + failOver + "'";
      }
    };
  }

  /**
   * Runs {@code command} with {@code sh -c}, at most 120 s (then it and its children are killed);
   * its output is in the error when it fails (a user's HA tool may say why).
   *
   * @throws IOException when it exits with a non-zero status or does not finish in time
   */
  static void run(String command) throws IOException {
    if (command == null || command.isBlank()) {
      return;
    }
    // the output goes to a file, read once the command ended: reading a pipe until its end would
    // wait as long as the command (and its children) run, past the bound
    java.nio.file.Path log = java.nio.file.Files.createTempFile("lease-failover-", ".log");
    try {
      Process p =
          new ProcessBuilder(List.of("sh", "-c", command))
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
              .start();
      try {
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
          p.descendants().forEach(ProcessHandle::destroyForcibly);
          p.destroyForcibly();
          throw new IOException("'" + command + "' did not finish within 120 s");
        }
      } catch (InterruptedException e) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while running '" + command + "'", e);
      }
      byte[] out = java.nio.file.Files.readAllBytes(log);
      if (p.exitValue() != 0) {
        throw new IOException(
            "'"
                + command
                + "' exited with status "
                + p.exitValue()
                + ": "
                + new String(out, StandardCharsets.UTF_8).strip());
      }
    } finally {
      java.nio.file.Files.deleteIfExists(log);
    }
  }
}
