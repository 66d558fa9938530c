package dev.lease.conformance.failover;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.conformance.Mutation;
import dev.lease.conformance.Mutations;
import dev.lease.conformance.failover.FailoverProperty.Break;
import dev.lease.conformance.failover.FailoverProperty.Moment;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseManager;
import dev.lease.core.LossReason;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * One holder of the failover property in a JVM of its own, as an application's instances run: its
 * own lease manager, HikariCP pools on the multi-host URL and fenced data source. It is started
 * once per check by {@link HolderProcesses} and serves one round after another, driven by a line
 * protocol (fields separated by tabs): commands on its standard input, events on its standard
 * output, each stamped with {@link System#nanoTime()} where the parent needs a time.
 *
 * <p>Commands: {@code round <index> <url> <user> <password> <lease table> <data table> <steady>
 * <break> <seed>} (answer {@code started}, or {@code error <why>}), {@code arm <moment>}, {@code
 * disarm}, {@code go} (the answer to {@code fire}), {@code held} (answer {@code held <term>
 * <holder> ...}: the leases {@link Lease#isHeld()} says are held), {@code stop} (answer {@code
 * stopped <statements the break changed>}), {@code exit}.
 *
 * <p>Events: {@code ready <nanos>}, {@code granted <term> <holder> <asked> <claimed>}, {@code
 * committed <term> <holder> <txn> <nanos>}, {@code refused}, {@code failed <error>}, {@code lost
 * <term> <holder> <nanos> <reason>}, {@code renewed <term> <holder> <nanos> <renewal started or
 * -1>}, {@code released <term> <holder> <nanos>}, {@code handover}, {@code fire <moment>} (the
 * round's moment is armed and this holder reached it: the parent starts the failover and answers
 * {@code go} once replication has stalled, so what the holder does next is what the failover cuts).
 */
final class HolderProcess {

  private final PrintStream out;
  private final BlockingQueue<String> goes = new LinkedBlockingQueue<>();
  private volatile Moment armed;

  /**
   * The round being held; written under {@code out}'s lock, so a round's event is written only
   * while it is the current one (a holder thread still busy after its round's {@code stop} writes
   * nothing the parent would count toward the next round).
   */
  private RoundHolder current;

  private HolderProcess(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) throws Exception {
    // The protocol owns this stream: anything else a library prints goes to standard error.
    PrintStream protocol =
        new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    System.setOut(System.err);
    HolderProcess p = new HolderProcess(protocol);
    // loaded before "ready", so the first round's start does not pay for it
    Class.forName(HikariDataSource.class.getName());
    Class.forName(LeaseManager.class.getName());
    Class.forName(FencedDataSource.class.getName());
    if (args.length > 0) {
      try {
        java.sql.DriverManager.getDriver(args[0]); // the check's driver, initialised
      } catch (SQLException e) {
        // then the first round's first connection loads it
      }
    }
    p.emit("ready", System.nanoTime());
    p.serve(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
  }

  private void serve(BufferedReader in) throws Exception {
    String line;
    while ((line = in.readLine()) != null) {
      String[] f = LineProtocol.fields(line);
      switch (f[0]) {
        case "round" -> {
          RoundHolder round = null;
          try {
            round = new RoundHolder(f);
            setCurrent(round);
            round.start();
            emit("started");
          } catch (RuntimeException e) {
            if (round != null) {
              round.stop();
            }
            setCurrent(null);
            emit("error", oneLine(e));
          }
        }
        case "arm" -> armed = Moment.valueOf(f[1]);
        case "disarm" -> armed = null;
        case "go" -> goes.add("go");
        case "held" -> {
          java.util.List<Object> held = new java.util.ArrayList<>();
          held.add("held");
          if (current != null) {
            for (Lease l : current.leases) {
              if (l.isHeld()) {
                held.add(l.term());
                held.add(l.holder());
              }
            }
          }
          emit(held.toArray());
        }
        case "stop" -> {
          long hits = current == null ? 0 : current.stop();
          setCurrent(null);
          armed = null;
          goes.clear();
          emit("stopped", hits);
        }
        case "exit" -> {
          return;
        }
        default -> throw new IllegalStateException("unknown command: " + line);
      }
    }
    if (current != null) {
      current.stop();
    }
  }

  private void emit(Object... fields) {
    emitLine(line(fields));
  }

  private static String line(Object... fields) {
    return LineProtocol.line(fields);
  }

  private void setCurrent(RoundHolder round) {
    synchronized (out) {
      current = round;
    }
  }

  /** Writes a round's event if {@code round} is still the current one; false if not. */
  private boolean emitFor(RoundHolder round, Object... fields) {
    synchronized (out) {
      if (current != round) {
        return false;
      }
      out.println(line(fields));
      out.flush();
      return true;
    }
  }

  private void emitLine(String line) {
    synchronized (out) {
      out.println(line);
      out.flush();
    }
  }

  /** An error as one field (the protocol escapes it; the parent's report reads better so). */
  private static String oneLine(Throwable e) {
    return String.valueOf(e).replace('\t', ' ').replace('\r', ' ').replace('\n', ' ');
  }

  /** The holder of one round: claim, a few fenced transactions, hand over; again until stopped. */
  private final class RoundHolder implements Runnable {
    final int index;
    final String url;
    final String user;
    final String password;
    final String leaseTable;
    final String dataTable;
    final boolean steady;
    final Break broken;
    final Random random;
    final AtomicBoolean stop = new AtomicBoolean();
    final AtomicBoolean fired = new AtomicBoolean();

    /** This round's events: written only while it is the current round ({@link #emitFor}). */
    private boolean emit(Object... fields) {
      return emitFor(this, fields);
    }

    final AtomicLong txns = new AtomicLong();
    final Set<Lease> leases = ConcurrentHashMap.newKeySet();
    final Mutations mutations;
    final long txnBase;
    HikariDataSource leasePool;
    HikariDataSource dataPool;
    LeaseManager manager;
    FencedDataSource fenced;
    Thread thread;

    RoundHolder(String[] f) {
      this.index = Integer.parseInt(f[1]);
      this.url = f[2];
      this.user = f[3].isEmpty() ? null : f[3];
      this.password = f[4];
      this.leaseTable = f[5];
      this.dataTable = f[6];
      this.steady = Boolean.parseBoolean(f[7]);
      this.broken = Break.valueOf(f[8]);
      long seed = Long.parseLong(f[9]);
      this.random = new Random(seed);
      // txn ids unique across the round's processes: the holder's number in the high bits
      this.txnBase = (Long.parseLong(f[10]) + 1) << 40;
      this.mutations =
          !steady && broken == Break.CLAIM_KEEPS_TERM
              ? Mutations.of(Set.of(Mutation.CLAIM_KEEPS_TERM))
              : !steady && broken == Break.TERM_PLUS_ONE
                  ? Mutations.of(Set.of(Mutation.TERM_PLUS_ONE))
                  : Mutations.none();
    }

    void start() {
      leasePool = pool("lease", 3);
      dataPool = pool("data", 2);
      // The first connections of a fresh JVM load and initialise the driver: with every holder
      // process doing so at once on a loaded machine that took longer than the pools' 5 s borrow
      // (measured: "Connection is not available" in the first round), so the start waits up to
      // 30 s for one of each.
      awaitConnection(leasePool);
      awaitConnection(dataPool);
      manager =
          LeaseManager.builder(mutating(leasePool))
              .table(leaseTable)
              .timings(FailoverProperty.TIMINGS)
              .instance("holder-" + ProcessHandle.current().pid())
              .failurePolicy(FailurePolicy.logOnly())
              .listener(listener())
              .build();
      fenced =
          FencedDataSource.wrap(
              dataPool, FencingOptions.builder().mode(FencingMode.STRICT).build());
      thread = new Thread(this, "failover-holder");
      thread.setDaemon(true);
      thread.start();
    }

    private void awaitConnection(HikariDataSource pool) {
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (true) {
        try (Connection c = pool.getConnection()) {
          return;
        } catch (SQLException e) {
          if (System.nanoTime() > end) {
            throw new IllegalStateException("no connection within 30 s: " + e, e);
          }
        }
      }
    }

    /** Stops the loop and closes everything; the statements the break changed. */
    long stop() {
      stop.set(true);
      if (thread == null) { // its start failed
        closeQuietly();
        return mutations.hits();
      }
      try {
        thread.join(TimeUnit.SECONDS.toMillis(5));
        if (thread.isAlive()) {
          StringBuilder trace = new StringBuilder();
          for (StackTraceElement e : thread.getStackTrace()) {
            trace.append("\n    at ").append(e);
          }
          System.err.println("failover round " + index + ": holder still busy:" + trace);
        }
        thread.join(TimeUnit.SECONDS.toMillis(25));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      closeQuietly();
      return mutations.hits();
    }

    private void closeQuietly() {
      try {
        if (manager != null) {
          manager.close();
        }
      } catch (RuntimeException e) {
        // the round's result stands
      }
      if (leasePool != null) {
        leasePool.close();
      }
      if (dataPool != null) {
        dataPool.close();
      }
    }

    /**
     * A pool on the round's URL. The borrow waits long enough for a multi-host URL to try a dead
     * host and a standby before the primary on a loaded machine (2 s was not, measured).
     */
    private HikariDataSource pool(String name, int size) {
      HikariConfig config = new HikariConfig();
      config.setPoolName("failover-" + index + "-" + name);
      config.setJdbcUrl(url);
      config.setUsername(user);
      config.setPassword(password);
      config.setMaximumPoolSize(size);
      config.setMinimumIdle(0);
      config.setConnectionTimeout(5000);
      config.setValidationTimeout(500);
      config.setInitializationFailTimeout(-1);
      return new HikariDataSource(config);
    }

    /**
     * The lease pool as the broken version of lease-core would use it: its SQL rewritten by the
     * control's mutation where it reaches the driver (nothing when there is none).
     */
    private DataSource mutating(DataSource ds) {
      if (mutations.isEmpty()) {
        return ds;
      }
      return (DataSource)
          Proxy.newProxyInstance(
              DataSource.class.getClassLoader(),
              new Class<?>[] {DataSource.class},
              rewriting(ds, DataSource.class));
    }

    private InvocationHandler rewriting(Object target, Class<?> iface) {
      return (proxy, m, args) -> {
        if (args != null
            && args.length > 0
            && args[0] instanceof String sql
            && (m.getName().startsWith("prepare")
                || m.getName().startsWith("execute")
                || m.getName().equals("addBatch"))) {
          args[0] = mutations.sql(sql);
        }
        Object result;
        try {
          result = m.invoke(target, args);
        } catch (InvocationTargetException e) {
          throw e.getCause();
        }
        Class<?> type = m.getReturnType();
        if (result != null
            && (type == Connection.class || type == Statement.class)
            && !m.getName().equals("unwrap")) {
          return Proxy.newProxyInstance(
              type.getClassLoader(), new Class<?>[] {type}, rewriting(result, type));
        }
        return result;
      };
    }

    private LeaseListener listener() {
      return new LeaseListener() {
        @Override
        public void lost(Lease lease, LossReason reason) {
          emit("lost", lease.term(), lease.holder(), System.nanoTime(), reason);
        }

        @Override
        public void renewed(Lease lease) {
          long now = System.nanoTime();
          long remaining = lease.remaining().toNanos();
          long started =
              remaining > 0
                  ? now + remaining - FailoverProperty.TIMINGS.localDeadline().toNanos()
                  : -1;
          emit("renewed", lease.term(), lease.holder(), now, started);
        }

        @Override
        public void released(Lease lease) {
          emit("released", lease.term(), lease.holder(), System.nanoTime());
        }
      };
    }

    /**
     * At a moment of the workload: when it is the round's armed moment and this holder has not
     * fired yet, asks the parent to start the failover and waits until replication has stalled. The
     * steady holder fires nothing.
     */
    private void at(Moment m) {
      if (steady || m != armed || !fired.compareAndSet(false, true)) {
        return;
      }
      if (!emit("fire", m)) {
        return; // a round already stopped: its failover is not this holder's to start
      }
      try {
        if (goes.poll(60, TimeUnit.SECONDS) == null) {
          System.err.println("failover round " + index + ": no answer to fire within 60 s");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    private boolean trustsClock() {
      return !steady && broken == Break.HOLDER_TRUSTS_ITS_CLOCK;
    }

    @Override
    public void run() {
      String name = steady ? FailoverProperty.STEADY : FailoverProperty.NAME;
      while (!stop.get()) {
        Lease lease;
        long asked = System.nanoTime();
        try {
          lease = manager.tryClaim(name).orElse(null);
        } catch (RuntimeException e) {
          emit("failed", oneLine(e));
          pause(50);
          continue;
        }
        if (lease == null) {
          pause(20 + random.nextInt(40));
          continue;
        }
        long claimed = System.nanoTime();
        leases.add(lease);
        emit("granted", lease.term(), lease.holder(), asked, claimed);
        try {
          lease.hold();
        } catch (RuntimeException e) {
          continue;
        }
        at(Moment.BETWEEN_CLAIM_AND_FIRST_VERIFY);
        // The broken holder writes for as long as its clock allows, through the failover.
        int transactions = trustsClock() || steady ? Integer.MAX_VALUE : 2 + random.nextInt(5);
        // A transaction the failover broke (not one the fence refused) is tried again: the holder
        // keeps its lease through the outage, so a lease held across a failover shorter than the
        // local deadline is kept, and a longer one lost (the counts say which).
        for (int i = 0; i < transactions && !stop.get(); ) {
          if (trustsClock()) {
            if (System.nanoTime() - claimed > FailoverProperty.TIMINGS.leaseDuration().toNanos()) {
              break;
            }
          } else if (!lease.isHeld()) {
            break;
          }
          if (transaction(lease)) {
            i++;
          }
          if (steady) {
            pause(FailoverProperty.STEADY_PAUSE_MS);
          }
        }
        if (lease.isHeld()) {
          // The failover starts before this release: the successor's claim then runs while
          // replication is stalled and the primary is being killed.
          at(Moment.DURING_CLAIM);
          try {
            lease.release();
            emit("handover");
          } catch (RuntimeException e) {
            // it expires by itself
          }
        }
      }
    }

    /** One transaction; false if it failed for another reason than the fence's refusal. */
    private boolean transaction(Lease lease) {
      long txn = txnBase + txns.incrementAndGet();
      boolean trustsClock = trustsClock();
      try (LeaseContext.Scope scope = trustsClock ? null : LeaseContext.bind(lease);
          Connection c = trustsClock ? dataPool.getConnection() : fenced.getConnection()) {
        c.setAutoCommit(false);
        FailoverTables.insert(c, dataTable, lease.holder(), lease.term(), txn);
        at(Moment.INSIDE_STRICT_TRANSACTION);
        c.commit();
        emit("committed", lease.term(), lease.holder(), txn, System.nanoTime());
        return true;
      } catch (SQLException e) {
        if (FailoverProperty.refusedByFence(e)) {
          emit("refused");
          return true;
        }
        emit("failed", oneLine(e));
        pause(50);
        return false;
      } catch (RuntimeException e) {
        emit("failed", oneLine(e));
        pause(50);
        return false;
      }
    }
  }

  private static void pause(long millis) {
    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
  }
}
