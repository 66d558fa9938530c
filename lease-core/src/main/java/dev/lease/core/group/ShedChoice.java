package dev.lease.core.group;

import java.util.SortedSet;

/**
 * Chooses the keys a {@link LeaseGroup} sheds when it holds more than its fair share, for example
 * idle ones: asked once per key to shed, each time with the keys not chosen yet. The default sheds
 * the last keys in the set's order.
 */
@FunctionalInterface
public interface ShedChoice {

  /**
   * @param held the keys this process holds now (never empty)
   * @return one of {@code held}; anything else (or null) sheds the default choice
   */
  String choose(SortedSet<String> held);
}
