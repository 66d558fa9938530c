package dev.lease.conformance.failover;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.lists;
import static org.quicktheories.generators.SourceDSL.strings;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;

/**
 * The holder processes' line protocol: any fields (a password with a tab, an error message with a
 * carriage return) come back as they were sent, and a child's command line shows no more of a
 * database URL than the driver's scheme.
 */
class LineProtocolTest {

  /** Text rich in the protocol's separators and escapes. */
  private static Gen<String> field() {
    Gen<String> separators = strings().betweenCodePoints('\t', '\\').ofLengthBetween(0, 12);
    return separators.mix(strings().allPossible().ofLengthBetween(0, 12), 50);
  }

  @Test
  void anyFieldsComeBackAsTheyWereSentOnOneLine() {
    qt().withExamples(2_000)
        .forAll(lists().of(field()).ofSizeBetween(1, 6))
        .checkAssert(
            fields -> {
              String line = LineProtocol.line(fields.toArray());
              assertFalse(line.contains("\n") || line.contains("\r"), line);
              assertArrayEquals(fields.toArray(new String[0]), LineProtocol.fields(line));
            });
  }

  @Test
  void theFormerSplitLosesAFieldWithATab() {
    // the control: what the parent did before, split on tabs without escapes
    List<String> fields = List.of("round", "pass\tword", "t");
    assertEquals(4, String.join("\t", fields).split("\t", -1).length);
    assertEquals(3, LineProtocol.fields(LineProtocol.line(fields.toArray())).length);
  }

  @Test
  void aChildsCommandLineShowsTheSchemeOnly() {
    assertEquals(
        "jdbc:postgresql://localhost/x",
        LineProtocol.driverUrl("jdbc:postgresql://h1:5432,h2:5433/test?user=u&password=secret"));
    assertEquals(
        "jdbc:mariadb:replication://localhost/x",
        LineProtocol.driverUrl("jdbc:mariadb:replication://root:secret@h1,h2/test"));
    assertEquals("jdbc:postgresql:x", LineProtocol.driverUrl("jdbc:postgresql:test?password=s"));
    assertEquals(
        "jdbc:postgresql:x",
        LineProtocol.driverUrl("jdbc:postgresql:test?password=secret&f=http://x"));
    assertEquals("jdbc:oracle:thin:x", LineProtocol.driverUrl("jdbc:oracle:thin:u/secret@h:1/s"));
    qt().forAll(strings().allPossible().ofLengthBetween(1, 20))
        .checkAssert(
            secret -> {
              String url = "jdbc:postgresql:db?password=" + secret;
              assertTrue(LineProtocol.driverUrl(url).startsWith("jdbc:postgresql:"));
              assertFalse(
                  LineProtocol.driverUrl(url).contains("password"), LineProtocol.driverUrl(url));
            });
  }
}
