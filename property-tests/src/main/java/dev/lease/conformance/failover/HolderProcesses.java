package dev.lease.conformance.failover;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The failover property's holders as child JVMs ({@link HolderProcess}), started once per check and
 * serving every round of it: separate processes, as an application's instances are, each with its
 * own lease manager, pools, JDBC driver state and threads; only the database is shared.
 *
 * <p>Times cross the pipe as {@link System#nanoTime()} values and are compared with the parent's
 * own: on Linux, HotSpot's nanoTime is {@code clock_gettime(CLOCK_MONOTONIC)}, one clock for every
 * process of the machine (measured here: a child's first nanoTime lies between the parent's
 * nanoTime before it started the child and after it read the child's line; {@link #awaitReady}
 * checks that for every child of every check and refuses to run on a machine where it does not
 * hold).
 */
final class HolderProcesses implements AutoCloseable {

  /** Receives the events of the children (called on each child's reader thread). */
  interface Events {
    void on(Child child, String[] fields);
  }

  private final List<Child> children = new ArrayList<>();
  private volatile Events events = (c, f) -> {};

  private HolderProcesses() {}

  private long startedNanos;
  private boolean ready;

  /**
   * Starts {@code count} holders (the last one {@code steady}: see {@link FailoverProperty}) for a
   * check of {@code url}, without waiting for them: they start (load their classes and the URL's
   * driver) while the first round prepares the pair and makes its tables; {@link #awaitReady}
   * before the first round's holders start.
   */
  static HolderProcesses start(int count, String url) throws IOException {
    HolderProcesses all = new HolderProcesses();
    try {
      all.startedNanos = System.nanoTime();
      for (int i = 0; i < count; i++) {
        all.children.add(new Child(all, i, i == count - 1, url));
      }
    } catch (IOException | RuntimeException e) {
      all.close();
      throw e;
    }
    return all;
  }

  /**
   * Waits until every child is ready (once), and checks its clock against this process's.
   *
   * @throws IOException when one did not start within 60 s, or its clock is not this process's
   */
  void awaitReady() throws IOException {
    if (ready) {
      return;
    }
    for (Child c : children) {
      String[] r = c.await("ready", 60);
      long theirs = Long.parseLong(r[1]);
      long received = Long.parseLong(r[r.length - 1]); // stamped by the reader on arrival
      if (theirs < startedNanos || theirs > received) {
        throw new IOException(
            "holder process "
                + c.id
                + " reads another nanoTime clock than this JVM (its "
                + theirs
                + " is not between "
                + startedNanos
                + " and "
                + received
                + "): the failover property compares their times and needs one monotonic clock"
                + " for every process (CLOCK_MONOTONIC, as HotSpot on Linux)");
      }
    }
    ready = true;
  }

  List<Child> children() {
    return children;
  }

  /** Where the children's events go from now on (the round that runs). */
  void events(Events e) {
    this.events = e;
  }

  /** Every child to {@code command}. */
  void sendAll(String... command) throws IOException {
    for (Child c : children) {
      c.send(command);
    }
  }

  @Override
  public void close() {
    for (Child c : children) {
      c.close();
    }
  }

  /** One holder process and its pipes. */
  static final class Child {
    final int id;
    final boolean steady;
    private final HolderProcesses owner;
    private final Process process;
    private final Writer in;
    private final BlockingQueue<String[]> answers = new LinkedBlockingQueue<>();

    /**
     * Answers owed by the child (its {@code ready}, and one per {@code round}, {@code held} and
     * {@code stop}, which it answers one at a time, in order) and answers taken: an answer taken
     * while more are owed answers an earlier request whose wait timed out, and is dropped, never
     * read as the answer to a later one.
     */
    private long owed = 1;

    private volatile long taken;

    /** The first line of the child the parent could not read, if any: every later wait fails. */
    private volatile String protocolError;

    private final Deque<String> lastErrorLines = new ArrayDeque<>();

    Child(HolderProcesses owner, int id, boolean steady, String url) throws IOException {
      this.owner = owner;
      this.id = id;
      this.steady = steady;
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      // small and quick to start: a holder runs one loop and a few connections
      command.add("-Xmx96m");
      command.add("-XX:+UseSerialGC");
      command.add("-XX:TieredStopAtLevel=1");
      command.add(
          "-Dorg.slf4j.simpleLogger.defaultLogLevel="
              + System.getProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"));
      command.add("-cp");
      command.add(System.getProperty("java.class.path"));
      command.add(HolderProcess.class.getName());
      // its driver is loaded before the process says it is ready; the URL's scheme only, as a
      // command line is visible to every user of the machine (a URL may carry a password)
      command.add(LineProtocol.driverUrl(url));
      this.process = new ProcessBuilder(command).start();
      this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
      Thread reader = new Thread(this::read, "failover-holder-" + id + "-out");
      reader.setDaemon(true);
      reader.start();
      Thread errors = new Thread(this::drainErrors, "failover-holder-" + id + "-err");
      errors.setDaemon(true);
      errors.start();
    }

    synchronized void send(String... fields) throws IOException {
      switch (fields[0]) {
        case "round", "held", "stop" -> owed++;
        default -> {}
      }
      try {
        in.write(LineProtocol.line((Object[]) fields));
        in.write('\n');
        in.flush();
      } catch (IOException e) {
        throw new IOException("holder process " + id + " is gone" + lastErrors(), e);
      }
    }

    /**
     * The next answer of this child, which must be {@code kind}; an {@code error} answer, none
     * within {@code seconds} or an exited child is an IOException.
     */
    String[] await(String kind, long seconds) throws IOException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
      String[] a;
      while (true) {
        try {
          a = answers.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while waiting for holder process " + id, e);
        }
        if (protocolError != null) {
          throw new IOException("holder process " + id + ": " + protocolError + lastErrors());
        }
        if (a == null || ++taken >= owedNow()) {
          break;
        }
        // the late answer of an earlier request whose wait ran out: not this one's
      }
      if (a == null) {
        throw new IOException(
            "holder process "
                + id
                + (process.isAlive() ? " did not answer " : " exited before it answered ")
                + kind
                + " within "
                + seconds
                + " s"
                + lastErrors());
      }
      if (!a[0].equals(kind)) {
        throw new IOException(
            "holder process " + id + " answered " + String.join(" ", a) + " to " + kind);
      }
      return a;
    }

    private synchronized long owedNow() {
      return owed;
    }

    private void read() {
      try (BufferedReader r =
          new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          try {
            String[] f = LineProtocol.fields(line);
            switch (f[0]) {
              case "ready" -> {
                String[] stamped = java.util.Arrays.copyOf(f, f.length + 1);
                stamped[f.length] = Long.toString(System.nanoTime());
                answers.add(stamped);
              }
              case "started", "stopped", "held", "error" -> answers.add(f);
              default -> owner.events.on(this, f);
            }
          } catch (RuntimeException e) {
            // a line the parent cannot read fails the check (the next wait for this child says
            // so), never this thread silently: the lines after it are still read
            if (protocolError == null) {
              protocolError = "a line the parent could not read: '" + line + "': " + e;
            }
            answers.add(new String[] {"protocol-error"}); // wakes a waiting await
          }
        }
      } catch (IOException e) {
        // the process ended; await says so
      }
    }

    /** Its standard error: shown with the tests' log, and the last lines kept for errors. */
    private void drainErrors() {
      try (BufferedReader r =
          new BufferedReader(
              new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          if (Boolean.getBoolean("lease.failover.log")) {
            System.out.println("holder " + id + ": " + line);
          }
          synchronized (lastErrorLines) {
            lastErrorLines.addLast(line);
            if (lastErrorLines.size() > 20) {
              lastErrorLines.removeFirst();
            }
          }
        }
      } catch (IOException e) {
        // the process ended
      }
    }

    private String lastErrors() {
      synchronized (lastErrorLines) {
        return lastErrorLines.isEmpty()
            ? ""
            : "; its last output:\n  " + String.join("\n  ", lastErrorLines);
      }
    }

    void close() {
      try {
        send("exit");
      } catch (IOException e) {
        // gone already
      }
      try {
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          process.destroyForcibly();
          process.waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}
