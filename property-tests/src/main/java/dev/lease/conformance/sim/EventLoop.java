package dev.lease.conformance.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The one true time of a simulation and the timers of every simulated process, run in time order on
 * the calling thread. Timers of a paused process wait until it resumes (a stop-the-world pause or
 * SIGSTOP); they then run late, as they would in a real process.
 */
final class EventLoop {

  /** A pending timer; also the {@link ScheduledFuture} the keeper may cancel. */
  final class Event implements ScheduledFuture<Object> {
    final SimProcess owner;
    final long due;
    final long seq;
    final Runnable task;
    boolean cancelled;
    boolean done;

    Event(SimProcess owner, long due, long seq, Runnable task) {
      this.owner = owner;
      this.due = due;
      this.seq = seq;
      this.task = task;
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

  Event schedule(SimProcess owner, long delayNanos, Runnable task) {
    Event e = new Event(owner, now + Math.max(0, delayNanos), seq++, task);
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
        if (e.owner != null && (e.owner.paused || e.owner.crashed)) {
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
      next.task.run();
      afterEach.run();
    }
    now = Math.max(now, until);
  }

  void clear() {
    events.clear();
    now = 0;
  }
}
