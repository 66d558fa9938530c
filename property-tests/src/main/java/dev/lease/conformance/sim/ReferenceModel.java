package dev.lease.conformance.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * What the lease protocol should do, written as plainly as possible: one lease row judged by the
 * database clock, and per process the lease it last claimed with its local deadline on its own
 * clock. The model-based property runs the same commands against lease-core and this model and
 * compares.
 */
final class ReferenceModel {

  enum State {
    HELD,
    LOST,
    RELEASED
  }

  /** A process's view of the lease it claimed. */
  static final class ModelLease {
    final String key;
    final long term;
    long lastRenewalStart;
    State state = State.HELD;

    ModelLease(String key, long term, long start) {
      this.key = key;
      this.term = term;
      this.lastRenewalStart = start;
    }
  }

  static final class ModelProcess {
    ModelLease lease;
    int drop;
    boolean paused;

    /** A release that did not reach the database, tried again (null: none pending). */
    RetriedRelease retry;
  }

  /**
   * lease-core tries a failed release again every renew interval of the process's clock until the
   * row would have expired (the lease's duration after the failure); the timer is the process's, so
   * it waits while the process is paused.
   */
  static final class RetriedRelease {
    final String key;
    final long term;
    final long giveUpLocal;
    long dueTrue;
    long seq;

    RetriedRelease(String key, long term, long giveUpLocal) {
      this.key = key;
      this.term = term;
      this.giveUpLocal = giveUpLocal;
    }
  }

  /**
   * The simulated environment the model reads, not lease-core's logic: each process's clock (a
   * timer runs on it) and the simulation's true time.
   */
  private List<ProcessClock> clocks = List.of();

  private LongSupplier trueNow = () -> 0;
  private long renewIntervalNanos;
  private long seq;

  /** The model's holder of a transferred lease not adopted yet. */
  static final String PENDING = "pending";

  /** The process a pending transfer is for. */
  int pendingFor = -1;

  long transfers;
  long adoptions;

  final long leaseMs;
  final long localDeadlineNanos;
  final List<ModelProcess> processes = new ArrayList<>();
  String holder = "";
  long term;
  long expiresAtMs;

  /** lease-core creates the row before its first claim, at the database clock in ms × 1000. */
  private boolean rowCreated;

  private int claims;

  ReferenceModel(int processes, long leaseMs, long localDeadlineNanos) {
    this.leaseMs = leaseMs;
    this.renewIntervalNanos = leaseMs * 1_000_000L / 5;
    this.localDeadlineNanos = localDeadlineNanos;
    for (int i = 0; i < processes; i++) {
      this.processes.add(new ModelProcess());
    }
  }

  /** The processes' clocks and the true time, for the timers of retried releases. */
  ReferenceModel environment(List<ProcessClock> clocks, LongSupplier trueNow, long renewNanos) {
    this.clocks = clocks;
    this.trueNow = trueNow;
    this.renewIntervalNanos = renewNanos;
    return this;
  }

  /** The release failed at {@code local}: the first retry is a renew interval later. */
  private void retryLater(int process, ModelProcess p, ModelLease l, long local) {
    RetriedRelease r = new RetriedRelease(l.key, l.term, local + leaseMs * 1_000_000L);
    if (schedule(process, r, local, trueNow.getAsLong())) {
      p.retry = r;
    }
  }

  /**
   * Schedules the next try of {@code r} from {@code local} on the process's clock ({@code atTrue}
   * in true time), unless the row would have expired by then.
   */
  private boolean schedule(int process, RetriedRelease r, long local, long atTrue) {
    if (local + renewIntervalNanos - r.giveUpLocal > 0) {
      return false;
    }
    r.dueTrue = atTrue + clocks.get(process).toTrue(renewIntervalNanos);
    r.seq = ++seq;
    return true;
  }

  /**
   * Time passes until {@code untilTrue}: every retried release due by then (of a process not
   * paused) runs, in time order, as the process's timer would.
   */
  private void advance(long untilTrue) {
    long start = trueNow.getAsLong();
    while (true) {
      int next = -1;
      for (int i = 0; i < processes.size(); i++) {
        ModelProcess p = processes.get(i);
        RetriedRelease r = p.retry;
        if (r == null || p.paused || r.dueTrue > untilTrue) {
          continue;
        }
        RetriedRelease best = next < 0 ? null : processes.get(next).retry;
        if (best == null
            || r.dueTrue < best.dueTrue
            || (r.dueTrue == best.dueTrue && r.seq < best.seq)) {
          next = i;
        }
      }
      if (next < 0) {
        return;
      }
      ModelProcess p = processes.get(next);
      RetriedRelease r = p.retry;
      p.retry = null;
      long at = Math.max(start, r.dueTrue);
      if (dropped(p)) {
        // the process's clock when the try failed (its rate holds while time passes here)
        ProcessClock clock = clocks.get(next);
        long local = clock.nanoTime() + (long) ((at - start) * clock.rate());
        if (schedule(next, r, local, at)) {
          p.retry = r;
        }
        continue;
      }
      if (holder.equals(r.key) && term == r.term) {
        expiresAtMs = 0;
      }
    }
  }

  /** Consumes an injected drop: true if this request never reaches the database. */
  private boolean dropped(ModelProcess p) {
    if (p.drop > 0) {
      p.drop--;
      return true;
    }
    return false;
  }

  /**
   * Lease.isHeld(): not ended, and the local deadline has not passed (else it is lost now, and
   * lease-core releases it at once: one request, holder and term checked).
   */
  private boolean locallyHeld(ModelProcess p, ModelLease l, long local) {
    if (l.state != State.HELD) {
      return false;
    }
    if (local - l.lastRenewalStart >= localDeadlineNanos) {
      l.state = State.LOST;
      if (!dropped(p) && holder.equals(l.key) && term == l.term) {
        expiresAtMs = 0;
      }
      return false;
    }
    return true;
  }

  private boolean databaseHolder(ModelLease l, long nowMs) {
    return holder.equals(l.key) && term == l.term && expiresAtMs > nowMs;
  }

  SimWorld.Outcome apply(Command c, long nowMs, long local) {
    ModelProcess p = c.process() < processes.size() ? processes.get(c.process()) : null;
    ModelLease l = p == null ? null : p.lease;
    switch (c.kind()) {
      case CLAIM:
        if (p.paused) {
          return SimWorld.Outcome.SKIPPED;
        }
        if (dropped(p)) {
          return SimWorld.Outcome.ERROR;
        }
        if (!rowCreated) {
          rowCreated = true;
          term = nowMs * 1000;
        }
        if (expiresAtMs > nowMs) {
          // a refused claim then asks whether the lease was transferred to it: one more request
          if (dropped(p)) {
            return SimWorld.Outcome.ERROR;
          }
          if (holder.equals(PENDING) && pendingFor == c.process()) {
            // adopted: a fresh holder at the transfer's term, a full lease from now
            holder = "p" + c.process() + "#" + (++claims);
            expiresAtMs = nowMs + leaseMs;
            p.lease = new ModelLease(holder, term, local);
            adoptions++;
            return SimWorld.Outcome.OK;
          }
          return SimWorld.Outcome.REFUSED;
        }
        term = Math.max(term + 1, nowMs * 1000); // the database clock in µs (ms here) as the floor
        holder = "p" + c.process() + "#" + (++claims);
        expiresAtMs = nowMs + leaseMs;
        p.lease = new ModelLease(holder, term, local);
        return SimWorld.Outcome.OK;
      case RENEW:
      case VERIFY:
        if (p.paused || l == null) {
          return SimWorld.Outcome.SKIPPED;
        }
        if (!locallyHeld(p, l, local)) {
          return SimWorld.Outcome.REFUSED;
        }
        if (dropped(p)) {
          return SimWorld.Outcome.ERROR;
        }
        if (!databaseHolder(l, nowMs)) {
          l.state = State.LOST;
          return SimWorld.Outcome.REFUSED;
        }
        if (c.kind() == Command.Kind.RENEW) {
          expiresAtMs = nowMs + leaseMs;
          l.lastRenewalStart = Math.max(l.lastRenewalStart, local);
        }
        return SimWorld.Outcome.OK;
      case RELEASE:
        if (p.paused || l == null) {
          return SimWorld.Outcome.SKIPPED;
        }
        if (l.state != State.HELD) {
          return SimWorld.Outcome.OK;
        }
        l.state = State.RELEASED;
        if (dropped(p)) {
          retryLater(c.process(), p, l, local); // the lease ended here; its row is freed later
          return SimWorld.Outcome.ERROR;
        }
        if (holder.equals(l.key) && term == l.term) {
          expiresAtMs = 0;
        }
        return SimWorld.Outcome.OK;
      case TRANSACTION:
        // through lease-jdbc: the connection first (a dropped request), then the fence's local
        // check, then the verify in the database
        if (p.paused || l == null) {
          return SimWorld.Outcome.SKIPPED;
        }
        if (dropped(p)) {
          return SimWorld.Outcome.ERROR;
        }
        if (!locallyHeld(p, l, local)) {
          return SimWorld.Outcome.REFUSED;
        }
        if (!databaseHolder(l, nowMs)) {
          l.state = State.LOST; // the database refused it: the lease is lost at once (DATABASE)
          return SimWorld.Outcome.REFUSED;
        }
        return SimWorld.Outcome.OK;
      case TRANSFER:
        // Lease.transferTo: the local check, the work stopped and the lease ended here, then one
        // statement that writes a new term pending for the successor while this holder holds it
        if (p.paused || l == null) {
          return SimWorld.Outcome.SKIPPED;
        }
        if (!locallyHeld(p, l, local)) {
          return SimWorld.Outcome.REFUSED;
        }
        l.state = State.RELEASED;
        if (dropped(p)) {
          return SimWorld.Outcome.ERROR;
        }
        if (!databaseHolder(l, nowMs)) {
          return SimWorld.Outcome.REFUSED;
        }
        term = Math.max(term + 1, nowMs * 1000);
        holder = PENDING;
        pendingFor = c.amount();
        expiresAtMs = nowMs + leaseMs;
        transfers++;
        return SimWorld.Outcome.OK;
      case DROP:
        p.drop++;
        return SimWorld.Outcome.OK;
      case PAUSE:
        p.paused = true;
        return SimWorld.Outcome.OK;
      case RESUME:
        p.paused = false;
        return SimWorld.Outcome.OK;
      case ADVANCE:
        advance(trueNow.getAsLong() + c.amount() * 1_000_000L);
        return SimWorld.Outcome.OK;
      default:
        return SimWorld.Outcome.OK;
    }
  }
}
