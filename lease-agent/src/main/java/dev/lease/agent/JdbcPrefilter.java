package dev.lease.agent;

import java.lang.instrument.Instrumentation;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Which classes the agent looks at (issue 37). Describing a class means parsing its class file;
 * most classes of an application never mention JDBC. Every type the agent weaves is a JDBC
 * implementation, whose class file names {@code java/sql/}, {@code javax/sql/} or {@code
 * javax/transaction/xa/} (an interface it implements, a method returning a connection), or a class
 * the rules or the configuration name; anything else is passed over by a search of its bytes,
 * before {@link ClassWeaver} describes it. The ignored loaders and prefixes are passed over by
 * name. Of the classes loaded before the agent, {@link #loadedCandidates} chooses from the loaded
 * classes themselves.
 */
final class JdbcPrefilter {

  private JdbcPrefilter() {}

  /**
   * Which class files need not be described: those of the ignored loaders and prefixes, and those
   * that neither mention JDBC nor are named by the rules.
   */
  static final class Decision {
    /**
     * Prefixes never woven (the JDK, ByteBuddy, the agent and lease-core), as internal names. Kept
     * here, not in the outer class: the transformer asks this class about every class that loads,
     * the outer class's own load included, so nothing it asks may need a class not loaded yet.
     */
    private static final String[] IGNORED = {
      "java/",
      "javax/",
      "jdk/",
      "sun/",
      "com/sun/",
      "net/bytebuddy/",
      "dev/lease/agent/",
      "dev/lease/core/"
    };

    private final Predicate<String> named;

    /**
     * @param named whether the rules or the configuration name a class (a binary name), asked at
     *     each class: the names grow as DataSources reveal the ancestors they inherit from
     */
    Decision(Predicate<String> named) {
      this.named = named;
    }

    /** True when no rule can weave this class: it need not be described. */
    boolean passOver(ClassLoader loader, String internalName, byte[] bytes) {
      if (internalName == null || bytes == null) {
        return false; // a hidden or unnamed class: ClassWeaver decides
      }
      if (ignored(loader, internalName)) {
        return true;
      }
      if (named.test(internalName.replace('/', '.'))) {
        return false;
      }
      return !mentionsJdbc(bytes);
    }

    /**
     * The boot and platform loaders' classes, and the ignored prefixes: never woven. Asked of each
     * class that loads, and of the classes loaded before the agent ({@link #loadedCandidates}).
     */
    static boolean ignored(ClassLoader loader, String internalName) {
      if (loader == null || loader == ClassLoader.getPlatformClassLoader()) {
        return true;
      }
      for (String prefix : IGNORED) {
        if (internalName.startsWith(prefix)) {
          return true;
        }
      }
      return false;
    }
  }

  /**
   * Whether {@code bytes} contain {@code java/sql/}, {@code javax/sql/} or {@code
   * javax/transaction/xa/}: one pass, looking further only where a {@code java} starts.
   */
  static boolean mentionsJdbc(byte[] bytes) {
    int n = bytes.length;
    for (int i = 0; i + 9 <= n; i++) {
      if (bytes[i] != 'j' || bytes[i + 1] != 'a' || bytes[i + 2] != 'v' || bytes[i + 3] != 'a') {
        continue;
      }
      int at = i + 4;
      if (bytes[at] == 'x') {
        at++;
      }
      if (at < n && bytes[at] == '/') {
        if (startsWith(bytes, at + 1, SQL) || (at > i + 4 && startsWith(bytes, at + 1, XA))) {
          return true;
        }
      }
    }
    return false;
  }

  private static final byte[] SQL = "sql/".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] XA = "transaction/xa/".getBytes(StandardCharsets.US_ASCII);

  private static boolean startsWith(byte[] bytes, int from, byte[] word) {
    if (from + word.length > bytes.length) {
      return false;
    }
    for (int k = 0; k < word.length; k++) {
      if (bytes[from + k] != word[k]) {
        return false;
      }
    }
    return true;
  }

  private static final List<Class<?>> WOVEN_INTERFACES =
      List.of(
          javax.sql.DataSource.class,
          java.sql.Driver.class,
          javax.sql.PooledConnection.class,
          javax.sql.ConnectionPoolDataSource.class,
          javax.sql.XADataSource.class,
          javax.transaction.xa.XAResource.class);

  /**
   * The classes loaded before the agent that a rule may weave (checked on the loaded classes, no
   * class file read): JDBC implementations, the classes named by the rules and the configuration,
   * and the superclasses of loaded DataSources (a DataSource may inherit getConnection). {@code
   * JdbcTypes} and the other matchers still decide; this only keeps the rest from being described.
   */
  static Set<Class<?>> loadedCandidates(
      Instrumentation inst, Predicate<String> named, boolean connections) {
    Set<Class<?>> found = new LinkedHashSet<>();
    for (Class<?> c : inst.getAllLoadedClasses()) {
      if (!mayWeave(c, named, connections) || !inst.isModifiableClass(c)) {
        continue;
      }
      found.add(c);
      if (javax.sql.DataSource.class.isAssignableFrom(c)) {
        for (Class<?> up = c.getSuperclass(); up != null; up = up.getSuperclass()) {
          if (mayBeWoven(up) && inst.isModifiableClass(up)) {
            found.add(up);
          }
        }
      }
    }
    return found;
  }

  private static boolean mayWeave(Class<?> c, Predicate<String> named, boolean connections) {
    if (!mayBeWoven(c)) {
      return false;
    }
    if (named.test(c.getName())) {
      return true;
    }
    if (c.isInterface()) {
      return false;
    }
    for (Class<?> i : WOVEN_INTERFACES) {
      if (i.isAssignableFrom(c)) {
        return true;
      }
    }
    return connections && java.sql.Connection.class.isAssignableFrom(c);
  }

  /** Not a class the transformer ignores ({@link Decision#ignored}), nor a synthetic one. */
  private static boolean mayBeWoven(Class<?> c) {
    return !c.isSynthetic() && !Decision.ignored(c.getClassLoader(), c.getName().replace('.', '/'));
  }
}
