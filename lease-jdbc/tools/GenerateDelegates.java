import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Writes the *Delegate base classes of lease-jdbc: every method of a JDBC interface forwarded to the
 * delegate, with no reflection at run time (HikariCP generates its proxies the same way). Methods
 * that carry fencing logic are left abstract for the hand-written Fencing* subclass; execute methods
 * go through the fence hooks; returned ResultSets are wrapped so that getStatement() returns the
 * wrapper; returned driver objects that can reach the database (Array, Blob, Clob, NClob, Ref,
 * Struct, and whatever getObject returns) go through the {@code object} hook ({@code
 * dev.lease.jdbc.internal.fence.DriverObjects}), and our own wrappers passed back in as parameters
 * are unwrapped to the driver's objects first ({@code FencedObject.raw}); a prepared statement's
 * parameter setters also remember the value for the verify carried in the first statement's round
 * trip (the {@code record} hook, FencingPreparedStatement), or mark the parameters unreplayable
 * when the value is a stream, a reader or a LOB (it can be read once, or belongs to the driver's
 * session).
 *
 * <p>The build runs it (lease-jdbc/pom.xml, phase generate-sources) with the single-file source
 * launcher, {@code java tools/GenerateDelegates.java <source root>}, and compiles its output from
 * {@code target/generated-sources/delegates}; nothing it writes is checked in. The output depends
 * only on this file and the JDK's java.sql interfaces (the same from JDK 17 to 25 but for the JDK
 * named in the header).
 */
public class GenerateDelegates {

  /** The package directory under the source root given as the one argument. */
  static Path out;

  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: java tools/GenerateDelegates.java <source root>");
      System.exit(2);
    }
    out = Path.of(args[0]).resolve("dev/lease/jdbc/internal/fence");
    Files.createDirectories(out);
    // before the fence moved to internal.fence the delegates were written one package up: a target
    // directory from then would compile them beside the new ones and fail
    try (var old = Files.newDirectoryStream(Path.of(args[0]).resolve("dev/lease/jdbc"), "*Delegate.java")) {
      for (Path p : old) {
        Files.delete(p);
      }
    } catch (java.nio.file.NoSuchFileException e) {
      // nothing was generated there
    }
    gen("StatementDelegate", Statement.class, null, "Statement",
        Set.of("getConnection", "unwrap", "isWrapperFor", "close", "isClosed", "addBatch",
            "clearBatch", "executeBatch", "executeLargeBatch"), "delegate");
    gen("PreparedStatementDelegate", PreparedStatement.class, "FencingStatement", "PreparedStatement",
        Set.of(), "prepared");
    gen("CallableStatementDelegate", CallableStatement.class, "FencingPreparedStatement",
        "CallableStatement", Set.of(), "callable");
    gen("ResultSetDelegate", ResultSet.class, null, "ResultSet",
        Set.of("getStatement", "unwrap", "isWrapperFor", "close"), "delegate");
    gen("DatabaseMetaDataDelegate", DatabaseMetaData.class, null, "DatabaseMetaData",
        Set.of("getConnection", "unwrap", "isWrapperFor"), "delegate");
    gen("ConnectionDelegate", Connection.class, null, "Connection",
        Set.of("unwrap", "isWrapperFor", "close", "isClosed", "commit", "rollback", "setAutoCommit",
            "getAutoCommit", "setSavepoint", "getMetaData", "abort", "beginRequest", "endRequest",
            "setTransactionIsolation", "setReadOnly"), "delegate");
    try (var files = Files.list(out)) { // a class no longer generated must not linger
      for (Path f : (Iterable<Path>) files::iterator) {
        if (!written.contains(f.getFileName().toString())) {
          Files.delete(f);
        }
      }
    }
  }

  /** The files written (or found unchanged) by this run. */
  static final Set<String> written = new java.util.HashSet<>();

  /** Writes a file only if its text changed, so an unchanged build does not recompile lease-jdbc. */
  static void write(String file, String text) throws IOException {
    Path f = out.resolve(file);
    written.add(file);
    if (!Files.exists(f) || !Files.readString(f).equals(text)) {
      Files.writeString(f, text);
    }
  }

  static void gen(String name, Class<?> iface, String superClass, String simple, Set<String> skip,
      String field) throws IOException {
    StringBuilder b = new StringBuilder();
    b.append("package dev.lease.jdbc.internal.fence;\n\n");
    b.append("// GENERATED by tools/GenerateDelegates.java from ").append(iface.getName())
        .append(" (JDK ").append(Runtime.version().feature()).append("); do not edit by hand.\n\n");
    b.append("/** Forwards every {@link ").append(iface.getName()).append("} method")
        .append(superClass == null ? "" : " it declares")
        .append(" to the delegate; the fencing logic lives in the subclass. */\n");
    b.append("@SuppressWarnings({\"deprecation\", \"removal\"})\n");
    b.append("abstract class ").append(name);
    if (superClass != null) {
      b.append(" extends ").append(superClass);
    }
    b.append(" implements ").append(iface.getName()).append(" {\n\n");
    String typeName = iface.getName();
    b.append("  final ").append(typeName).append(' ').append(field).append(";\n\n");
    if (superClass == null) {
      b.append("  ").append(name).append("(").append(typeName).append(" delegate) {\n")
          .append("    this.delegate = delegate;\n  }\n\n");
    } else {
      b.append("  ").append(name).append("(ParentConnection connection, ").append(typeName)
          .append(" delegate, String sql) {\n")
          .append("    super(connection, delegate, sql);\n")
          .append("    this.").append(field).append(" = delegate;\n  }\n\n");
    }
    b.append(hooks(name));
    List<Method> methods = Arrays.stream(iface.getMethods())
        .filter(m -> !Modifier.isStatic(m.getModifiers()))
        .filter(m -> superClass == null || m.getDeclaringClass() == iface)
        .sorted(Comparator.comparing(GenerateDelegates::signature))
        .collect(Collectors.toList());
    for (Method m : methods) {
      if (skip.contains(m.getName())) {
        continue;
      }
      b.append(method(m, iface, field));
    }
    b.append("}\n");
    write(name + ".java", b.toString());
  }

  /** Driver objects a method may return that can reach the database: wrapped on the way out. */
  static final Set<Class<?>> DRIVER_OBJECTS = Set.of(java.sql.Array.class, java.sql.Blob.class,
      java.sql.Clob.class, java.sql.NClob.class, java.sql.Ref.class, java.sql.Struct.class,
      Object.class);

  /** Parameter types that may carry one of our wrappers back to the driver: unwrapped on the way in. */
  static final Set<Class<?>> PARAMETER_OBJECTS = Set.of(java.sql.Array.class, java.sql.Blob.class,
      java.sql.Clob.class, java.sql.NClob.class, java.sql.Ref.class, java.sql.Struct.class,
      Object.class, Object[].class);

  /** The fencing hooks the generated code calls; the hand-written subclass implements them. */
  static String hooks(String name) {
    String sqlE = " throws java.sql.SQLException;\n";
    String objects = "  abstract Object object(Object value)" + sqlE + "\n"
        + "  abstract <T> T object(T value, Class<T> type)" + sqlE + "\n";
    switch (name) {
      case "StatementDelegate":
        return "  abstract boolean idle();\n\n"
            + "  abstract java.sql.SQLException failed(java.sql.SQLException e);\n\n"
            + "  abstract <T> T execute(StatementSource source, String sql, SqlCall<T> call)" + sqlE + "\n"
            + "  abstract java.sql.ResultSet resultSet(java.sql.ResultSet rs);\n\n"
            + objects;
      case "ResultSetDelegate":
        return "  abstract boolean idle();\n\n"
            + "  abstract java.sql.SQLException failed(java.sql.SQLException e);\n\n"
            + "  abstract <T> T execute(StatementSource source, String sql, SqlCall<T> call)" + sqlE + "\n"
            + objects;
      case "PreparedStatementDelegate":
        return "  /** Sets one remembered parameter at index {@code i} of another statement. */\n"
            + "  @FunctionalInterface\n"
            + "  interface Param {\n"
            + "    void set(java.sql.PreparedStatement ps, int i)" + sqlE
            + "  }\n\n"
            + "  /** Remembers a parameter set, if the statement remembers them. */\n"
            + "  abstract void record(int index, Param p);\n\n"
            + "  /** False (and the parameters unreplayable) if the value can be set only once. */\n"
            + "  abstract boolean replayable(Object value);\n\n"
            + "  /** A parameter that cannot be set again was set. */\n"
            + "  abstract void markUnreplayable();\n\n";
      case "DatabaseMetaDataDelegate":
        return "  abstract java.sql.ResultSet resultSet(java.sql.ResultSet rs);\n\n";
      case "ConnectionDelegate":
        return "  abstract java.sql.Statement statement(java.sql.Statement s);\n\n"
            + "  abstract java.sql.PreparedStatement prepared(java.sql.PreparedStatement s, String sql);\n\n"
            + "  abstract java.sql.CallableStatement callable(java.sql.CallableStatement s, String sql);\n\n"
            + objects;
      default:
        return "";
    }
  }

  /**
   * Parameter types whose values cannot be set on a second statement: streams and readers are read
   * once, LOBs, SQLXML, refs and arrays belong to the driver's session (FencingPreparedStatement).
   */
  static final Set<Class<?>> UNREPLAYABLE = Set.of(java.io.InputStream.class, java.io.Reader.class,
      java.sql.Blob.class, java.sql.Clob.class, java.sql.NClob.class, java.sql.SQLXML.class,
      java.sql.Ref.class, java.sql.Array.class);

  static String signature(Method m) {
    return m.getName() + Arrays.toString(m.getParameterTypes());
  }

  static String method(Method m, Class<?> iface, String field) {
    StringBuilder b = new StringBuilder("  @Override\n  public ");
    TypeVariable<Method>[] tps = m.getTypeParameters();
    if (tps.length > 0) {
      b.append('<').append(Arrays.stream(tps).map(TypeVariable::getName)
          .collect(Collectors.joining(", "))).append("> ");
    }
    Type ret = m.getGenericReturnType();
    b.append(ret.getTypeName()).append(' ').append(m.getName()).append('(');
    Type[] ps = m.getGenericParameterTypes();
    StringBuilder args = new StringBuilder();
    for (int i = 0; i < ps.length; i++) {
      if (i > 0) {
        b.append(", ");
        args.append(", ");
      }
      b.append(ps[i].getTypeName()).append(" a").append(i);
      if (PARAMETER_OBJECTS.contains(m.getParameterTypes()[i])) {
        args.append("FencedObject.raw(a").append(i).append(')');
      } else {
        args.append('a').append(i);
      }
    }
    b.append(')');
    if (m.getExceptionTypes().length > 0) {
      b.append(" throws ").append(Arrays.stream(m.getExceptionTypes()).map(Class::getName)
          .collect(Collectors.joining(", ")));
    }
    b.append(" {\n");
    String call = field + "." + m.getName() + "(" + args + ")";
    boolean isVoid = m.getReturnType() == void.class;
    String n = m.getName();
    Class<?> rt = m.getReturnType();
    boolean statementFamily = Statement.class.isAssignableFrom(iface);
    boolean execute = (statementFamily && n.startsWith("execute"))
        || (iface == ResultSet.class && (n.equals("insertRow") || n.equals("updateRow")
            || n.equals("deleteRow")));
    boolean parameter = iface == PreparedStatement.class && n.startsWith("set") && isVoid
        && ps.length >= 2 && m.getParameterTypes()[0] == int.class;
    if (parameter) {
      // the driver's statement gets the value now; the log gets a setter to replay it on the
      // statement that carries the verify along, unless the value can be set only once
      b.append("    ").append(call).append(";\n");
      List<Class<?>> types = Arrays.asList(m.getParameterTypes());
      String replay = "record(a0, (ps, i) -> ps." + n + "(i" + args.substring(args.indexOf(",")) + "))";
      if (types.stream().anyMatch(UNREPLAYABLE::contains)) {
        b.append("    markUnreplayable();\n");
      } else if (types.get(1) == Object.class) {
        b.append("    if (replayable(a1)) {\n      ").append(replay).append(";\n    }\n");
      } else {
        b.append("    ").append(replay).append(";\n");
      }
    } else if (execute) {
      // no lease bound: straight through (an error only marks the driver's session view stale);
      // otherwise the fence reads the text: execute(String ...) the argument, the prepared
      // statement its SQL, a result set's row change nothing
      boolean text = statementFamily && ps.length > 0 && ps[0] == String.class;
      String source = iface == ResultSet.class ? "StatementSource.ROW_CHANGE"
          : text ? "StatementSource.TEXT" : "StatementSource.PREPARED";
      String sqlArg = text ? "a0" : "null";
      String wrapOpen = rt == ResultSet.class ? "resultSet(" : "";
      String wrapClose = rt == ResultSet.class ? ")" : "";
      b.append("    if (idle()) {\n      try {\n");
      if (isVoid) {
        b.append("        ").append(call).append(";\n        return;\n");
      } else {
        b.append("        return ").append(wrapOpen).append(call).append(wrapClose).append(";\n");
      }
      b.append("      } catch (java.sql.SQLException e) {\n        throw failed(e);\n      }\n    }\n");
      if (isVoid) {
        b.append("    execute(").append(source).append(", ").append(sqlArg)
            .append(", () -> {\n      ").append(call).append(";\n      return null;\n    });\n");
      } else {
        b.append("    return ").append(wrapOpen).append("execute(").append(source).append(", ")
            .append(sqlArg).append(", () -> ").append(call).append(")").append(wrapClose)
            .append(";\n");
      }
    } else if (rt == ResultSet.class) {
      b.append("    return resultSet(").append(call).append(");\n");
    } else if (ret instanceof TypeVariable) {
      // getObject(.., Class<T>): the wrapper when it is a T, else the driver's object as unwrap
      // would hand it out
      int type = Arrays.asList(m.getParameterTypes()).indexOf(Class.class);
      b.append("    return object(").append(call).append(", a").append(type).append(");\n");
    } else if (DRIVER_OBJECTS.contains(rt)) {
      b.append("    return ").append(rt == Object.class ? "" : "(" + rt.getName() + ") ")
          .append("object(").append(call).append(");\n");
    } else if (iface == Connection.class && n.equals("createStatement")) {
      b.append("    return statement(").append(call).append(");\n");
    } else if (iface == Connection.class && n.equals("prepareStatement")) {
      b.append("    return prepared(").append(call).append(", a0);\n");
    } else if (iface == Connection.class && n.equals("prepareCall")) {
      b.append("    return callable(").append(call).append(", a0);\n");
    } else if (isVoid) {
      b.append("    ").append(call).append(";\n");
    } else {
      b.append("    return ").append(call).append(";\n");
    }
    b.append("  }\n\n");
    return b.toString();
  }
}
