package dev.lease.agent;

import net.bytebuddy.asm.Advice;

/**
 * Inlined into {@code createStatement}, {@code prepareStatement} and {@code prepareCall} of every
 * JDBC connection class: a connection a configured {@code pool-internals} scope made must not run
 * statements unfenced ({@link ConnectionFencing#statementOn}). Not suppressed: if the check fails,
 * the statement fails (closed), never runs unchecked.
 */
final class StatementAdvice {

  private StatementAdvice() {}

  @Advice.OnMethodEnter
  static void enter(@Advice.This Object self) {
    ConnectionFencing.statementOn(self);
  }
}
