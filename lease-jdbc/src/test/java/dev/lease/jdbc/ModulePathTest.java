package dev.lease.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.module.Configuration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * lease-core and lease-jdbc as named modules, the way an application on the module path gets them
 * (the other tests run on the class path, where module boundaries do not apply): their descriptors
 * export the API packages only (the internals only to this project's modules), resolve with the
 * JDBC driver, and work: in a module layer of their own, a lease is claimed and released on SQLite,
 * a fenced write under it commits, and the same write under the released lease is refused, which
 * needs lease-jdbc's qualified access to lease-core's internals at run time.
 */
class ModulePathTest {

  @Test
  @DisplayName(
      "sqlite: lease-core and lease-jdbc as modules: exports, a claim, a fenced write, a refusal")
  void modulesResolveExportTheApiAndFence(@TempDir Path dir) throws Exception {
    ModuleLayer layer = layer();

    assertEquals(
        Map.of(
            "dev.lease.core",
                Set.of(
                    "dev.lease.core",
                    "dev.lease.core.group",
                    "dev.lease.core.scheduler",
                    "dev.lease.core.dialect -> [dev.lease.jdbc]",
                    "dev.lease.core.internal -> [dev.lease.agent, dev.lease.jdbc,"
                        + " dev.lease.spring.boot]"),
            "dev.lease.jdbc",
                Set.of("dev.lease.jdbc", "dev.lease.jdbc.internal -> [dev.lease.agent]")),
        Map.of(
            "dev.lease.core", exports(layer, "dev.lease.core"),
            "dev.lease.jdbc", exports(layer, "dev.lease.jdbc")),
        "the packages each module exports (PublicApiTest lists their types)");

    ClassLoader loader = layer.findLoader("dev.lease.jdbc");
    assertTrue(
        ServiceLoader.load(layer, Driver.class).stream()
            .anyMatch(p -> p.type().getName().equals("dev.lease.jdbc.FencedDriver")),
        "the jdbc:fenced: driver is provided as a service");

    Class<?> sqlite = loader.loadClass("org.sqlite.SQLiteDataSource");
    DataSource ds = (DataSource) sqlite.getConstructor().newInstance();
    sqlite.getMethod("setUrl", String.class).invoke(ds, "jdbc:sqlite:" + dir.resolve("m.db"));
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)");
    }

    Class<?> managerType = loader.loadClass("dev.lease.core.LeaseManager");
    Class<?> builderType = loader.loadClass("dev.lease.core.LeaseManager$Builder");
    Object builder = call(managerType, null, "builder", new Class<?>[] {DataSource.class}, ds);
    call(builderType, builder, "table", new Class<?>[] {String.class}, "module_path_leases");
    call(builderType, builder, "createTableIfMissing", new Class<?>[0]);
    AutoCloseable manager = (AutoCloseable) call(builderType, builder, "build", new Class<?>[0]);
    try {
      Optional<?> claimed =
          (Optional<?>)
              call(managerType, manager, "tryClaim", new Class<?>[] {String.class}, "orders");
      assertTrue(claimed.isPresent(), "claimed on the module path");
      Object lease = claimed.get();
      Class<?> leaseType = loader.loadClass("dev.lease.core.Lease");
      Class<?> context = loader.loadClass("dev.lease.core.LeaseContext");
      DataSource fenced =
          (DataSource)
              call(
                  loader.loadClass("dev.lease.jdbc.FencedDataSource"),
                  null,
                  "wrap",
                  new Class<?>[] {DataSource.class},
                  ds);

      try (AutoCloseable bound =
          (AutoCloseable) call(context, null, "bind", new Class<?>[] {leaseType}, lease)) {
        write(fenced, 1);
      }
      call(leaseType, lease, "release", new Class<?>[0]);
      try (AutoCloseable bound =
          (AutoCloseable) call(context, null, "bind", new Class<?>[] {leaseType}, lease)) {
        SQLException refused = assertThrows(SQLException.class, () -> write(fenced, 2));
        assertEquals(
            "dev.lease.jdbc.LeaseLostSQLException",
            refused.getClass().getName(),
            "the write under the released lease: " + refused);
      }
    } finally {
      manager.close();
    }
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT id FROM orders ORDER BY id")) {
      assertTrue(rs.next());
      assertEquals(1, rs.getInt(1), "the write under the held lease committed");
      assertFalse(rs.next(), "the write under the released lease did not");
    }
  }

  private static void write(DataSource fenced, int id) throws SQLException {
    try (Connection c = fenced.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.executeUpdate("INSERT INTO orders (id, note) VALUES (" + id + ", 'fenced')");
      }
      c.commit();
    }
  }

  /**
   * lease-core, lease-jdbc, slf4j and sqlite-jdbc from this test's class path, resolved as modules
   * in a layer of their own over the platform class loader (not the application class loader, which
   * would hand out the class-path copies).
   */
  private static ModuleLayer layer() {
    List<Path> paths = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path p = Path.of(entry);
      String name = p.getFileName().toString();
      boolean reactor =
          p.endsWith(Path.of("lease-core", "target", "classes"))
              || p.endsWith(Path.of("lease-jdbc", "target", "classes"));
      if (reactor
          || name.startsWith("lease-core-")
          || name.startsWith("slf4j-api-")
          || name.startsWith("sqlite-jdbc-")) {
        paths.add(p);
      }
    }
    assertTrue(
        paths.stream().anyMatch(p -> Files.exists(p.resolve("module-info.class"))),
        "module descriptors built: " + paths);
    Configuration cf =
        ModuleLayer.boot()
            .configuration()
            .resolveAndBind(
                ModuleFinder.of(paths.toArray(Path[]::new)),
                ModuleFinder.of(),
                Set.of("dev.lease.jdbc", "org.xerial.sqlitejdbc"));
    return ModuleLayer.boot().defineModulesWithOneLoader(cf, ClassLoader.getPlatformClassLoader());
  }

  private static Set<String> exports(ModuleLayer layer, String module) {
    ModuleDescriptor d = layer.findModule(module).orElseThrow().getDescriptor();
    return d.exports().stream()
        .map(e -> e.isQualified() ? e.source() + " -> " + new TreeSet<>(e.targets()) : e.source())
        .collect(Collectors.toSet());
  }

  private static Object call(
      Class<?> type, Object target, String name, Class<?>[] types, Object... args)
      throws Exception {
    Method m = type.getMethod(name, types);
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof Exception x) {
        throw x;
      }
      throw e;
    }
  }
}
