package dev.lease.core.group;

import java.util.SortedSet;

/**
 * Chooses the key a {@link LeaseGroup} sheds when it holds more than its fair share (one key per
 * pass), for example an idle one. The default sheds the last key in the set's order.
 */
@FunctionalInterface
public interface ShedChoice {

  /**
   * @param held the keys this process holds now (never empty)
   * @return one of {@code held}; anything else (or null) sheds the default choice
   */
  String choose(SortedSet<String> held);
}
