package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The verify's parameters written as literals for a plain Statement that carries it along. */
class PiggybackLiteralsTest {

  @Test
  void postgresqlStringsAreEscapedLiteralsAndNumbersDigits() {
    assertEquals(
        "SELECT 1 FROM t WHERE name = E'it''s \\\\ x' AND term = 7",
        Piggyback.withLiterals(
            "SELECT 1 FROM t WHERE name = ? AND term = ?", List.of("it's \\ x", 7L)));
  }

  @Test
  void mySqlStringsArePlainQuotedAndNeverNeedEscaping() {
    assertEquals(
        "SELECT 1 FROM t WHERE name = 'job' AND term = 7",
        Piggyback.withMySqlLiterals(
            "SELECT 1 FROM t WHERE name = ? AND term = ?", List.of("job", 7)));
    assertThrows(
        IllegalStateException.class,
        () -> Piggyback.withMySqlLiterals("SELECT ?", List.of("it's")));
  }

  @Test
  void aTextWhosePlaceholdersAndParametersDifferIsRefused() {
    assertThrows(
        IllegalStateException.class, () -> Piggyback.withLiterals("SELECT ?", List.of(1, 2)));
  }
}
