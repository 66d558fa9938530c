package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.lease.testing.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.api.parallel.Resources;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.opentest4j.AssertionFailedError;

/**
 * Every {@code ```java} block of README.md and docs/*.md compiles against the API as built (issue
 * 22: a snippet cannot drift from the code). Here, in the starter's tests, because their classpath
 * (run by lease-spring-boot-tests-boot3 and -boot4) holds every module a snippet uses: lease-core,
 * lease-jdbc, the starter, HikariCP, the drivers and Spring.
 *
 * <p>A block with a top-level class is compiled as it stands. Any other block is a fragment: it is
 * compiled as the body of a method, after its own leading imports and {@link #DEFAULT_IMPORTS}. The
 * names a fragment uses but does not declare (the reader's own {@code dataSource}, helpers) are
 * declared in an HTML comment right before the block, which the rendered page does not show:
 *
 * <pre>{@code
 * <!-- java-context: DataSource dataSource; abstract void runBilling(); -->
 * }</pre>
 *
 * <p>Its text becomes members of the abstract class around the method, so fields, {@code abstract}
 * methods and nested interfaces all work. The snippets that also run are run by the {@code
 * Readme*ExampleTest}s (lease-core, this module), which check their text against the pages.
 */
class DocSnippetsTest {

  static final String DEFAULT_IMPORTS =
      Stream.of(
              "dev.lease.core.*",
              "dev.lease.core.group.*",
              "dev.lease.core.scheduler.*",
              "dev.lease.jdbc.*",
              "java.sql.*",
              "javax.sql.DataSource",
              "java.time.*",
              "java.time.temporal.ChronoUnit",
              "java.util.*",
              "com.zaxxer.hikari.*",
              "org.springframework.jdbc.core.JdbcTemplate",
              "org.springframework.jdbc.datasource.*",
              "org.springframework.transaction.support.TransactionTemplate")
          .map(i -> "import " + i + ";\n")
          .collect(Collectors.joining());

  private static final Pattern BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern CONTEXT =
      // the last comment, right before the block (nothing but white space between them)
      Pattern.compile("<!--\\s*java-context:((?:(?!<!--).)*?)-->\\s*$", Pattern.DOTALL);
  private static final Pattern TOP_LEVEL_TYPE =
      Pattern.compile(
          "^(?:public\\s+)?(?:final\\s+|abstract\\s+)?(class|interface|record|enum)\\s+(\\w+)",
          Pattern.MULTILINE);
  private static final Pattern PUBLIC_TYPE =
      Pattern.compile(
          "^public\\s+(?:final\\s+|abstract\\s+)?(?:class|interface|record|enum)\\s+(\\w+)",
          Pattern.MULTILINE);

  /** One {@code ```java} block: where it is, its text, the context its comment declares. */
  record Snippet(String where, String code, String context) {
    @Override
    public String toString() {
      return where;
    }
  }

  static Path root() {
    // the tests run in lease-spring-boot-tests-boot3/-boot4 (or lease-spring-boot): the pages are
    // one level up
    Path up = Path.of("..").toAbsolutePath().normalize();
    assertTrue(Files.exists(up.resolve("README.md")), "README.md not found in " + up);
    return up;
  }

  static List<Path> pages() throws IOException {
    Path root = root();
    List<Path> pages = new ArrayList<>();
    pages.add(root.resolve("README.md"));
    try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    return pages;
  }

  static Stream<Arguments> snippets() throws IOException {
    List<Arguments> out = new ArrayList<>();
    Path root = root();
    for (Path page : pages()) {
      String text = Files.readString(page);
      Matcher m = BLOCK.matcher(text);
      while (m.find()) {
        int line = (int) text.substring(0, m.start()).lines().count() + 1;
        Matcher c = CONTEXT.matcher(text.substring(Math.max(0, m.start() - 2000), m.start()));
        String context = c.find() ? c.group(1).strip() : "";
        out.add(Arguments.of(new Snippet(root.relativize(page) + ":" + line, m.group(1), context)));
      }
    }
    return out.stream();
  }

  @Test
  void thePagesHaveJavaSnippets() throws IOException {
    // the README's three examples at least: a wrong path or a changed fence would pass on nothing
    assertTrue(snippets().count() >= 3, "too few ```java blocks found");
  }

  /**
   * Negative control: the issue's own wrong guess ({@code FailurePolicy.halt()} does not exist),
   * and a fragment that uses a name no comment declares, both fail.
   */
  @Test
  void aSnippetThatDoesNotCompileFails(@TempDir Path out) {
    assertThrows(
        AssertionFailedError.class,
        () ->
            compiles(
                new Snippet("control:1", "FailurePolicy p = FailurePolicy.halt();\n", ""), out));
    assertThrows(
        AssertionFailedError.class,
        () -> compiles(new Snippet("control:2", "LeaseManager.builder(dataSource);\n", ""), out));
    // the same fragment with its context compiles
    compiles(
        new Snippet("control:3", "LeaseManager.builder(dataSource);\n", "DataSource dataSource;"),
        out);
  }

  /**
   * The README's HikariCP example runs as written, on SQLite instead of PostgreSQL (only its JDBC
   * URL is swapped): it commits under its lease, releases it, and its stale write is refused.
   */
  @Test
  @DisplayName(
      "sqlite: the README's FencedDataSource example commits, then its stale write is refused")
  @ResourceLock(Resources.SYSTEM_OUT) // reads what the example prints: System.out is swapped
  void readmeFencedBillingRunsOnSqlite(@TempDir Path out) throws Exception {
    Snippet example =
        snippets()
            .map(a -> (Snippet) a.get()[0])
            .filter(x -> x.where().startsWith("README.md"))
            .filter(x -> x.code().contains("public class FencedBilling"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("README.md has no FencedBilling example"));
    String url = TestDatabase.SQLITE.url() + "?busy_timeout=5000";
    String code = example.code().replace("jdbc:postgresql://127.0.0.1:5432/test", url);
    assertNotEquals(example.code(), code, "the example's JDBC URL changed: update this test");
    compile(example, "FencedBilling", code, out);
    PrintStream stdout = System.out;
    ByteArrayOutputStream printed = new ByteArrayOutputStream();
    System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
    try (URLClassLoader loader =
        new URLClassLoader(new URL[] {out.toUri().toURL()}, getClass().getClassLoader())) {
      loader
          .loadClass("FencedBilling")
          .getMethod("main", String[].class)
          .invoke(null, (Object) new String[0]);
    } finally {
      System.setOut(stdout);
    }
    String text = printed.toString(StandardCharsets.UTF_8);
    assertTrue(text.contains("stale write refused (LOST_LOCALLY): "), text);
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT paid FROM invoice WHERE id = 42")) {
      assertTrue(
          rs.next() && rs.getBoolean(1), "the held lease's update committed, the stale one not");
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("snippets")
  void compiles(Snippet snippet, @TempDir Path out) {
    String code = snippet.code();
    String source;
    String className;
    Matcher type = TOP_LEVEL_TYPE.matcher(code);
    if (type.find()) {
      Matcher pub = PUBLIC_TYPE.matcher(code);
      className = pub.find() ? pub.group(1) : "Snippet";
      source = code;
    } else {
      className = "Snippet";
      List<String> lines = code.lines().toList();
      int i = 0;
      StringBuilder imports = new StringBuilder();
      while (i < lines.size() && (lines.get(i).startsWith("import ") || lines.get(i).isBlank())) {
        imports.append(lines.get(i++)).append('\n');
      }
      source =
          imports
              + DEFAULT_IMPORTS
              + "\n@SuppressWarnings(\"all\")\nabstract class Snippet {\n"
              + snippet.context()
              + "\n\nvoid snippet() throws Exception {\n"
              + String.join("\n", lines.subList(i, lines.size()))
              + "\n}\n}\n";
    }
    compile(snippet, className, source, out);
  }

  private static void compile(Snippet snippet, String className, String source, Path out) {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    String classpath =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    JavaFileObject file =
        new SimpleJavaFileObject(
            URI.create("string:///" + className + ".java"), JavaFileObject.Kind.SOURCE) {
          @Override
          public CharSequence getCharContent(boolean ignoreEncodingErrors) {
            return source;
          }
        };
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    boolean ok =
        javac
            .getTask(
                null,
                null,
                diagnostics,
                List.of("-classpath", classpath, "-d", out.toString(), "-proc:none", "-nowarn"),
                null,
                List.of(file))
            .call();
    if (!ok) {
      String errors =
          diagnostics.getDiagnostics().stream()
              .filter(d -> d.getKind() == Diagnostic.Kind.ERROR)
              .map(d -> "line " + d.getLineNumber() + ": " + d.getMessage(Locale.ROOT))
              .collect(Collectors.joining("\n"));
      String numbered =
          source
              .lines()
              .map(
                  new java.util.function.Function<String, String>() {
                    int n = 0;

                    @Override
                    public String apply(String l) {
                      return String.format("%4d  %s", ++n, l);
                    }
                  })
              .collect(Collectors.joining("\n"));
      fail(
          "the ```java block at "
              + snippet.where()
              + " does not compile:\n"
              + errors
              + "\n\nas compiled:\n"
              + numbered
              + "\n\nFix the snippet; if it is a fragment that uses names the reader defines"
              + " (a dataSource, a helper), declare them in a comment right before the block:"
              + " <!-- java-context: DataSource dataSource; abstract void runBilling(); -->");
    }
  }

  static {
    // fail early and clearly where no compiler is available (a JRE)
    if (ToolProvider.getSystemJavaCompiler() == null) {
      throw new UncheckedIOException(new IOException("DocSnippetsTest needs a JDK's javac"));
    }
  }
}
