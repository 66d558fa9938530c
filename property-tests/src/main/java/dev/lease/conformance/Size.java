package dev.lease.conformance;

/** How long a conformance run tries: the quick size runs in CI, the full size before a release. */
public enum Size {
  QUICK,
  FULL;

  /** {@code quick} when this is QUICK, otherwise {@code full}. */
  public int pick(int quick, int full) {
    return this == QUICK ? quick : full;
  }
}
