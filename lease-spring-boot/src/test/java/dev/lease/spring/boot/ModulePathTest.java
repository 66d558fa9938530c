package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.module.Configuration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The starter as a named module ({@code dev.lease.spring.boot}) on this Spring Boot line (the test
 * runs in both lease-spring-boot-tests modules, 3.5 and 4.0): every module it requires is there
 * (Spring's jars as automatic modules), it resolves with lease-core and lease-jdbc as modules, it
 * exports its one package, and its configuration classes link in a layer of their own. The tests
 * themselves run on the class path.
 */
class ModulePathTest {

  @Test
  void theStarterResolvesAsAModuleAndItsConfigurationLinks() throws Exception {
    List<Path> entries = new ArrayList<>();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path p = Path.of(e);
      if (Files.exists(p) && !p.endsWith(Path.of("target", "test-classes"))) {
        entries.add(p);
      }
    }
    ModuleDescriptor starter = null;
    for (Path p : entries) {
      for (ModuleReference r : ModuleFinder.of(p).findAll()) {
        if (r.descriptor().name().equals("dev.lease.spring.boot")) {
          starter = r.descriptor();
        }
      }
    }
    assertTrue(starter != null, "the starter's module descriptor on the class path: " + entries);
    assertTrue(starter.isOpen(), "open: Spring reads its configuration by reflection");
    assertEquals(
        Set.of("dev.lease.spring.boot"),
        starter.exports().stream()
            .map(ModuleDescriptor.Exports::source)
            .collect(Collectors.toSet()));

    // only the modules the starter names (and theirs): every jar of the class path as an automatic
    // module would bring split packages of unrelated jars
    Set<String> wanted = new HashSet<>();
    wanted.add("dev.lease.spring.boot");
    List<Path> chosen = new ArrayList<>();
    boolean grew = true;
    while (grew) {
      grew = false;
      for (Path p : entries) {
        if (chosen.contains(p)) {
          continue;
        }
        for (ModuleReference r : safeFindAll(p)) {
          ModuleDescriptor d = r.descriptor();
          if (wanted.contains(d.name())) {
            chosen.add(p);
            for (ModuleDescriptor.Requires q : d.requires()) {
              if (!q.modifiers().contains(ModuleDescriptor.Requires.Modifier.STATIC)
                  && wanted.add(q.name())) {
                grew = true;
              }
            }
            grew = true;
          }
        }
      }
    }
    Set<String> missing = new HashSet<>();
    for (ModuleDescriptor.Requires q : starter.requires()) {
      boolean optional = q.modifiers().contains(ModuleDescriptor.Requires.Modifier.STATIC);
      if (!optional && !q.name().startsWith("java.") && !found(chosen, q.name())) {
        missing.add(q.name());
      }
    }
    assertEquals(Set.of(), missing, "modules the starter requires, not on this Spring Boot line");

    Configuration cf =
        ModuleLayer.boot()
            .configuration()
            .resolve(
                ModuleFinder.of(chosen.toArray(Path[]::new)),
                ModuleFinder.of(),
                Set.of("dev.lease.spring.boot"));
    ModuleLayer layer =
        ModuleLayer.boot().defineModulesWithOneLoader(cf, ClassLoader.getPlatformClassLoader());
    Class<?> config =
        Class.forName(
            "dev.lease.spring.boot.LeaseAutoConfiguration",
            false,
            layer.findLoader("dev.lease.spring.boot"));
    assertEquals("dev.lease.spring.boot", config.getModule().getName());
    assertTrue(config.getDeclaredMethods().length > 0, "its bean methods link");
    assertTrue(config.getAnnotations().length > 0, "its annotations load");
  }

  private static List<ModuleReference> safeFindAll(Path p) {
    try {
      return new ArrayList<>(ModuleFinder.of(p).findAll());
    } catch (RuntimeException notAModule) {
      return List.of(); // a jar no automatic module name can be derived from: not one we need
    }
  }

  private static boolean found(List<Path> chosen, String module) {
    for (Path p : chosen) {
      for (ModuleReference r : safeFindAll(p)) {
        if (r.descriptor().name().equals(module)) {
          return true;
        }
      }
    }
    return false;
  }
}
