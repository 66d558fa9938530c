package dev.lease.conformance.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The one true time of a simulation and the timers of every simulated process, run in time order on
 * the calling thread. Timers of a paused process wait until it resumes (a stop-the-world pause or
 * SIGSTOP); they then run late, as they would in a real process. A process's work (its worker
 * thread) is one thread: while a step of it waits inside a statement, its next steps wait too,
 * while its keeper's timers and other processes run.
 */
final class EventLoop {

  /** A pending timer; also the {@link ScheduledFuture} the keeper may cancel. */
  final class Event implements ScheduledFuture<Object> {
    final SimProcess owner;
    final long due;
    final long seq;
    final Runnable task;
    final boolean work;
    boolean cancelled;
    boolean done;

    Event(SimProcess owner, long due, long seq, Runnable task, boolean work) {
      this.owner = owner;
      this.due = due;
      this.seq = seq;
      this.task = task;
      this.work = work;
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(due - now, TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      return Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS));
    }

    @Override
    public boolean cancel(boolean mayInterrupt) {
      if (done) {
        return false;
      }
      cancelled = true;
      events.remove(this);
      return true;
    }

    @Override
    public boolean isCancelled() {
      return cancelled;
    }

    @Override
    public boolean isDone() {
      return done || cancelled;
    }

    @Override
    public Object get() {
      return null;
    }

    @Override
    public Object get(long timeout, TimeUnit unit) {
      return null;
    }
  }

  private final List<Event> events = new ArrayList<>();
  private long seq;

  /** Virtual nanoseconds since the start of the schedule. */
  long now;

  /** A timer of {@code owner}'s keeper (or, with a null owner, of the world: faults). */
  Event schedule(SimProcess owner, long delayNanos, Runnable task) {
    return schedule(owner, delayNanos, task, false);
  }

  /** {@code work}: a step of the process's worker thread, never run while another one runs. */
  Event schedule(SimProcess owner, long delayNanos, Runnable task, boolean work) {
    Event e = new Event(owner, now + Math.max(0, delayNanos), seq++, task, work);
    events.add(e);
    return e;
  }

  /** Lets time pass inside a step (a slow statement, a stall): later timers then run late. */
  void pass(long nanos) {
    now += Math.max(0, nanos);
  }

  /**
   * Runs every timer due by {@code until} in time order (ties in scheduling order), calling {@code
   * afterEach} after each, then sets the time to {@code until} (or later, if a step let time pass
   * beyond it).
   */
  void runUntil(long until, Runnable afterEach) {
    while (true) {
      Event next = null;
      for (Event e : events) {
        if (e.owner != null && (e.owner.paused || e.owner.crashed || (e.work && e.owner.working))) {
          continue;
        }
        if (e.due <= until
            && (next == null || e.due < next.due || (e.due == next.due && e.seq < next.seq))) {
          next = e;
        }
      }
      if (next == null) {
        break;
      }
      events.remove(next);
      now = Math.max(now, next.due);
      next.done = true;
      SimProcess owner = next.owner;
      if (owner == null) {
        next.task.run();
      } else if (next.work) {
        owner.working = true;
        try {
          next.task.run();
        } finally {
          owner.working = false;
        }
      } else {
        owner.keeperDepth++;
        try {
          next.task.run();
        } finally {
          owner.keeperDepth--;
        }
      }
      afterEach.run();
    }
    now = Math.max(now, until);
  }

  void clear() {
    events.clear();
    now = 0;
  }
}
