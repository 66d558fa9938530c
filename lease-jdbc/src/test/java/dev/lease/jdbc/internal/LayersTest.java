package dev.lease.jdbc.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The fence's layers (docs/code.md, "The fence's layers"), read from the sources: a class of a
 * lower layer names no class of a layer above it (comments and strings aside). The collaborators
 * that talk to the database get the fence's shared parts ({@code FenceContext}) and the
 * collaborators below them, never {@code TransactionFence} or a JDBC face; reading SQL knows
 * nothing of the fence; the API's options do not depend on the bridge above the fence. The fence's
 * rules name no JDBC face ({@code StatementHandle} is what they know of a statement); the parts of
 * the rules get {@code FenceSteps}, not the fence; the objects a connection hands out get {@code
 * ParentConnection}, not the connection. No circle anywhere in lease-jdbc (its sources and the
 * generated delegates). The controls: the same reading of a face finds what it names, and the
 * circle search finds a circle once one downward edge is turned back up.
 */
class LayersTest {

  private static final Path FENCE = Path.of("src/main/java/dev/lease/jdbc/internal/fence");
  private static final Path SQL = Path.of("src/main/java/dev/lease/jdbc/internal/sql");
  private static final Path MAIN = Path.of("src/main/java");
  private static final Path GENERATED = Path.of("target/generated-sources/delegates");

  /** The fence's rules, above the conversation with the database. */
  private static final Set<String> RULES =
      Set.of(
          "TransactionFence",
          "SqlControl",
          "AutoCommitStatements",
          "Bypass",
          "AbandonedTransactions",
          "FenceSteps",
          "Piggyback");

  /** The JDBC faces, above the rules. */
  private static final Set<String> FACES =
      Set.of(
          "DriverObjects",
          "Fences",
          "FencingConnection",
          "FencingStatement",
          "FencingPreparedStatement",
          "FencingCallableStatement",
          "FencingResultSet",
          "FencingDatabaseMetaData",
          "FencedStreams",
          "FencingArray",
          "FencingBlob",
          "FencingClob",
          "FencingRef",
          "FencingStruct",
          "FencedObject",
          "ParentConnection");

  private static final Set<String> RULES_AND_FACES = union(RULES, FACES);

  private static Set<String> union(Set<String> a, Set<String> b) {
    Set<String> u = new TreeSet<>(a);
    u.addAll(b);
    return u;
  }

  /** The conversation with the database and the state below it. */
  private static final List<String> LOWER =
      List.of(
          "FenceContext",
          "Verifier",
          "Losses",
          "SessionView",
          "StatementReader",
          "VerifyStrategy",
          "TransactionState",
          "FencedTransaction",
          "Doubt",
          "DriverSession",
          "SessionBounds",
          "PgSessionDefaults",
          "MySqlDriverOptions",
          "LockTables",
          "Abandoning");

  /** A source without its comments, string literals and character literals. */
  static String code(Path file) throws IOException {
    String s = Files.readString(file);
    StringBuilder b = new StringBuilder(s.length());
    int i = 0;
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c == '/' && s.startsWith("/*", i)) {
        int end = s.indexOf("*/", i + 2);
        i = end < 0 ? s.length() : end + 2;
      } else if (c == '/' && s.startsWith("//", i)) {
        int end = s.indexOf('\n', i);
        i = end < 0 ? s.length() : end;
      } else if (c == '"' || c == '\'') {
        int j = i + 1;
        while (j < s.length() && s.charAt(j) != c) {
          j += s.charAt(j) == '\\' ? 2 : 1;
        }
        b.append(c).append(c);
        i = j + 1;
      } else {
        b.append(c);
        i++;
      }
    }
    return b.toString();
  }

  /** The names of {@code names} that {@code code} uses as words. */
  static Set<String> named(String code, Set<String> names) {
    Set<String> found = new TreeSet<>();
    Matcher m = Pattern.compile("\\b[A-Z][A-Za-z0-9]*\\b").matcher(code);
    while (m.find()) {
      if (names.contains(m.group())) {
        found.add(m.group());
      }
    }
    return found;
  }

  /** Each of {@code classes} (of the fence's package) that names one of {@code upper}, and what. */
  static List<String> upward(Iterable<String> classes, Set<String> upper) throws IOException {
    List<String> found = new ArrayList<>();
    for (String c : classes) {
      Set<String> up = named(code(FENCE.resolve(c + ".java")), upper);
      if (!up.isEmpty()) {
        found.add(c + " -> " + up);
      }
    }
    return found;
  }

  @Test
  void theConversationWithTheDatabaseNamesNeitherTheFencesRulesNorAJdbcFace() throws Exception {
    assertEquals(List.of(), upward(LOWER, RULES_AND_FACES), "imports that point back up");
  }

  @Test
  void theFencesRulesNameNoJdbcFace() throws Exception {
    assertEquals(List.of(), upward(RULES, FACES), "the rules reach a face (use StatementHandle)");
  }

  @Test
  void readingSqlKnowsNothingOfTheFence() throws Exception {
    try (Stream<Path> files = Files.list(SQL)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        assertFalse(code(f).contains("internal.fence"), f + " reaches into the fence's package");
      }
    }
  }

  @Test
  void theApisOptionsDoNotDependOnTheBridgeAboveTheFence() throws Exception {
    String options = code(Path.of("src/main/java/dev/lease/jdbc/FencingOptions.java"));
    assertEquals(Set.of(), named(options, Set.of("FenceInternals", "Fences")));
  }

  /**
   * The control: the same reading of a real source the layers put above (Piggyback runs the faces'
   * statements) finds the faces it names, so a lower class that did so would be caught.
   */
  @Test
  void controlTheReadingCatchesAClassThatNamesAFace() throws Exception {
    Set<String> up = named(code(FENCE.resolve("Piggyback.java")), RULES_AND_FACES);
    assertFalse(up.isEmpty(), "the reading found nothing in Piggyback");
  }

  /** Which classes each of lease-jdbc's classes names (by simple name; comments aside). */
  static Map<String, Set<String>> graph() throws IOException {
    Map<String, Path> files = new TreeMap<>();
    for (Path root : List.of(MAIN, GENERATED)) {
      try (Stream<Path> all = Files.walk(root)) {
        all.filter(f -> f.toString().endsWith(".java"))
            .filter(f -> !f.getFileName().toString().endsWith("-info.java"))
            .forEach(f -> files.put(f.getFileName().toString().replace(".java", ""), f));
      }
    }
    Map<String, Set<String>> g = new TreeMap<>();
    for (Map.Entry<String, Path> e : files.entrySet()) {
      Set<String> named = named(code(e.getValue()), files.keySet());
      named.remove(e.getKey());
      g.put(e.getKey(), named);
    }
    return g;
  }

  /** The circles of {@code g}: its strongly connected parts of more than one class (Tarjan). */
  static List<Set<String>> circles(Map<String, Set<String>> g) {
    Map<String, Integer> index = new HashMap<>();
    Map<String, Integer> low = new HashMap<>();
    Deque<String> stack = new ArrayDeque<>();
    List<Set<String>> found = new ArrayList<>();
    for (String v : g.keySet()) {
      if (!index.containsKey(v)) {
        connect(v, g, index, low, stack, found);
      }
    }
    return found;
  }

  private static void connect(
      String v,
      Map<String, Set<String>> g,
      Map<String, Integer> index,
      Map<String, Integer> low,
      Deque<String> stack,
      List<Set<String>> found) {
    index.put(v, index.size());
    low.put(v, index.get(v));
    stack.push(v);
    for (String w : g.getOrDefault(v, Set.of())) {
      if (!index.containsKey(w)) {
        connect(w, g, index, low, stack, found);
        low.put(v, Math.min(low.get(v), low.get(w)));
      } else if (stack.contains(w)) {
        low.put(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v).equals(index.get(v))) {
      Set<String> part = new TreeSet<>();
      String w;
      do {
        w = stack.pop();
        part.add(w);
      } while (!w.equals(v));
      if (part.size() > 1) {
        found.add(part);
      }
    }
  }

  @Test
  void noCircleInLeaseJdbc() throws Exception {
    Map<String, Set<String>> g = graph();
    assertTrue(g.size() > 60, "read " + g.size() + " classes");
    assertEquals(List.of(), circles(g), "classes that name each other, directly or around");
  }

  /**
   * The control: the same graph with one downward edge turned back up (a statement naming the
   * connection it came from, as {@code FencingStatement} did before {@code ParentConnection}) has a
   * circle, and the search finds it.
   */
  @Test
  void controlTheCircleSearchFindsAnEdgeTurnedBackUp() throws Exception {
    Map<String, Set<String>> g = graph();
    assertTrue(g.get("FencingConnection").contains("FencingStatement"));
    g.get("FencingStatement").add("FencingConnection");
    List<Set<String>> found = circles(g);
    assertEquals(1, found.size(), found.toString());
    assertTrue(found.get(0).containsAll(Set.of("FencingConnection", "FencingStatement")));
  }
}
