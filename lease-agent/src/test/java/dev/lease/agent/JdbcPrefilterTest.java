package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.function.Predicate;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * The prefilter must never pass over a class a rule weaves (issue 37): a class passed over is never
 * woven, and its connections would not be fenced. Checked on every class of the drivers and pools
 * on the test class path (pgjdbc, MySQL Connector/J, MariaDB Connector/J, sqlite-jdbc, HikariCP,
 * DBCP2, Tomcat JDBC, c3p0, Agroal, Oracle's UCP and driver) that implements a woven interface: its
 * class file must mention JDBC. Negative control: a search for {@code javax/sql/} alone misses
 * some.
 */
class JdbcPrefilterTest {

  private static final List<String> LIBRARIES =
      List.of(
          "postgresql",
          "mysql-connector-j",
          "mariadb-java-client",
          "sqlite-jdbc",
          "HikariCP",
          "commons-dbcp2",
          "tomcat-jdbc",
          "c3p0",
          "agroal-pool",
          "ucp",
          "ojdbc11");

  private static final List<Class<?>> WOVEN =
      List.of(
          javax.sql.DataSource.class,
          java.sql.Driver.class,
          javax.sql.PooledConnection.class,
          javax.sql.ConnectionPoolDataSource.class,
          javax.sql.XADataSource.class,
          javax.transaction.xa.XAResource.class,
          java.sql.Connection.class);

  /** Each woven class of the libraries: its name, and whether {@code mentions} finds it. */
  private static List<String> missed(Predicate<byte[]> mentions, int[] checked) throws Exception {
    List<String> missed = new ArrayList<>();
    for (String path : System.getProperty("java.class.path").split(File.pathSeparator)) {
      String file = new File(path).getName();
      if (!file.endsWith(".jar") || LIBRARIES.stream().noneMatch(file::startsWith)) {
        continue;
      }
      try (JarFile jar = new JarFile(path)) {
        for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
          JarEntry entry = e.nextElement();
          String name = entry.getName();
          if (!name.endsWith(".class") || name.contains("-info") || name.startsWith("META-INF")) {
            continue;
          }
          Class<?> c;
          try {
            c =
                Class.forName(
                    name.substring(0, name.length() - 6).replace('/', '.'),
                    false,
                    JdbcPrefilterTest.class.getClassLoader());
          } catch (Throwable notLoadable) {
            continue; // an optional dependency is missing: no application loads it either
          }
          if (c.isInterface() || WOVEN.stream().noneMatch(w -> w.isAssignableFrom(c))) {
            continue;
          }
          checked[0]++;
          if (!mentions.test(bytes(jar, entry)) && declaresWovenMethod(c)) {
            missed.add(c.getName());
          }
        }
      }
    }
    return missed;
  }

  /** The methods the rules weave: hand-outs, XA's, the statement factories of pool-internals. */
  private static final java.util.Set<String> WOVEN_METHODS =
      java.util.Set.of(
          "getConnection",
          "connect",
          "getPooledConnection",
          "getXAConnection",
          "getXAResource",
          "start",
          "end",
          "prepare",
          "commit",
          "rollback",
          "forget",
          "createStatement",
          "prepareStatement",
          "prepareCall");

  /**
   * Whether {@code c} declares a method a rule weaves. A JDBC class that declares none (a subclass
   * that only renames its parent: pgjdbc's Jdbc3SimpleDataSource, c3p0's ComboPooledDataSource) has
   * nothing to weave: its parent, which declares the methods and names JDBC, is woven when it
   * loads.
   */
  private static boolean declaresWovenMethod(Class<?> c) {
    try {
      for (java.lang.reflect.Method m : c.getDeclaredMethods()) {
        if (!m.isSynthetic() && WOVEN_METHODS.contains(m.getName())) {
          return true;
        }
      }
      return false;
    } catch (Throwable notResolvable) {
      return true; // cannot tell: count it as one that must mention JDBC
    }
  }

  private static byte[] bytes(JarFile jar, JarEntry entry) throws IOException {
    try (InputStream in = jar.getInputStream(entry)) {
      return in.readAllBytes();
    }
  }

  @Test
  void everyWovenClassOfTheDriversAndPoolsMentionsJdbc() throws Exception {
    int[] checked = {0};
    List<String> missed = missed(JdbcPrefilter::mentionsJdbc, checked);
    assertTrue(missed.isEmpty(), "passed over, so never woven: " + missed);
    // the events the check is about: the woven classes of the libraries
    assertTrue(checked[0] >= 100, "only " + checked[0] + " woven classes were checked"); // 150 here
  }

  @Test
  void negativeControlASearchForJavaxSqlAloneMissesWovenClasses() throws Exception {
    byte[] word = "javax/sql/".getBytes(StandardCharsets.US_ASCII);
    int[] checked = {0};
    List<String> missed = missed(b -> indexOf(b, word) >= 0, checked);
    assertFalse(missed.isEmpty(), "the check could not fail: " + checked[0] + " checked");
  }

  @Test
  void namesAndLoadersDecideBeforeTheBytes() {
    JdbcPrefilter.Decision d = new JdbcPrefilter.Decision("com.acme.Named"::equals);
    byte[] plain = "class without it".getBytes(StandardCharsets.US_ASCII);
    byte[] jdbc = "returns Ljava/sql/Connection;".getBytes(StandardCharsets.US_ASCII);
    ClassLoader app = JdbcPrefilterTest.class.getClassLoader();
    assertTrue(d.passOver(app, "com/acme/Plain", plain));
    assertFalse(d.passOver(app, "com/acme/Jdbc", jdbc));
    assertFalse(d.passOver(app, "com/acme/Named", plain), "named by the rules");
    assertTrue(d.passOver(null, "com/acme/Jdbc", jdbc), "the bootstrap loader is ignored");
    assertTrue(d.passOver(app, "dev/lease/agent/Anything", jdbc), "the agent's own");
    assertFalse(d.passOver(app, null, plain), "no name: ByteBuddy's own rules decide");
    assertTrue(
        JdbcPrefilter.mentionsJdbc(
            "implements javax/transaction/xa/XAResource".getBytes(StandardCharsets.US_ASCII)));
    assertFalse(
        JdbcPrefilter.mentionsJdbc("javax/sqlite java/sq".getBytes(StandardCharsets.US_ASCII)));
  }

  private static int indexOf(byte[] bytes, byte[] word) {
    outer:
    for (int i = 0; i + word.length <= bytes.length; i++) {
      for (int k = 0; k < word.length; k++) {
        if (bytes[i + k] != word[k]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
