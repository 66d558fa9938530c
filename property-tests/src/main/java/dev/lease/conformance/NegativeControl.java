package dev.lease.conformance;

import java.util.function.Function;

/**
 * A deliberately broken variant of the mechanism a property checks, run by the property's own
 * check: it must be caught (verdict {@code FAILS}) on every database it applies to.
 *
 * @param id the row label in the runner's table, {@code <property>/<break>}
 * @param breaks what is broken, in one phrase
 * @param broken the property with the break in place
 * @param notApplicable why the control does not apply to a target (the mechanism it breaks is not
 *     what protects that database), or null when it applies
 */
public record NegativeControl(
    String id, String breaks, ConformanceProperty broken, Function<Target, String> notApplicable) {

  public static NegativeControl of(String id, String breaks, ConformanceProperty broken) {
    return new NegativeControl(id, breaks, broken, t -> null);
  }

  /** Null when the control applies to {@code target}, else why not. */
  public String whyNotOn(Target target) {
    return notApplicable.apply(target);
  }

  /** Caught: the broken variant's check found a violation. */
  public static boolean caught(PropertyResult r) {
    return r.verdict() == PropertyResult.Verdict.FAILS;
  }
}
