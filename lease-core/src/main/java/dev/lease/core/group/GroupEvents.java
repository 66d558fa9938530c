package dev.lease.core.group;

import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The application's side of a group: its {@link GroupCallbacks} and {@link GroupListener}s, each
 * called so that one that throws is logged and never stops a pass.
 */
final class GroupEvents {

  private static final Logger log = LoggerFactory.getLogger(LeaseGroup.class);

  private final String group;
  private final GroupCallbacks callbacks;
  private final List<GroupListener> listeners;

  GroupEvents(String group, GroupCallbacks callbacks, List<GroupListener> listeners) {
    this.group = group;
    this.callbacks = callbacks;
    this.listeners = List.copyOf(listeners);
  }

  /** The application's callbacks; call them through {@link #safely}. */
  GroupCallbacks callbacks() {
    return callbacks;
  }

  void safely(Runnable callback) {
    try {
      callback.run();
    } catch (RuntimeException e) {
      log.warn("group {}: callback failed", group, e);
    }
  }

  void notify(Consumer<GroupListener> event) {
    for (GroupListener l : listeners) {
      try {
        event.accept(l);
      } catch (RuntimeException e) {
        log.warn("group {}: listener {} failed", group, l, e);
      }
    }
  }

  /** A key left this member by a release ({@code shed}: above the share) or a transfer. */
  void left(String key, boolean shed) {
    notify(
        l -> {
          if (shed) {
            l.shed(group, key);
          } else {
            l.released(group, key);
          }
        });
  }

  /** A key's lease ended without the group giving it back. */
  void lost(String key) {
    safely(() -> callbacks.onLost(key));
    notify(l -> l.lost(group, key));
  }
}
