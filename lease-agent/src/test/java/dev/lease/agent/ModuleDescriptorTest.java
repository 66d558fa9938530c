package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The agent's module descriptor: it exports nothing (the JVM calls premain/agentmain on the class
 * path, its only entry points), and requires exactly what the agent uses, each of lease-jdbc and
 * lease-core through their API and the internals they export to this module only (lease-jdbc's
 * ModulePathTest checks those qualified exports).
 */
class ModuleDescriptorTest {

  @Test
  void theAgentExportsNothingAndRequiresWhatItUses() throws IOException, URISyntaxException {
    // the agent's compiled classes (target/classes), not the first module-info on the class path
    Path classes =
        Path.of(LeaseAgent.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    ModuleDescriptor d;
    try (InputStream in = Files.newInputStream(classes.resolve("module-info.class"))) {
      d = ModuleDescriptor.read(in);
    }
    assertEquals("dev.lease.agent", d.name());
    assertTrue(d.exports().isEmpty(), "exports " + d.exports());
    assertTrue(d.opens().isEmpty(), "opens " + d.opens());
    Set<String> requires = new TreeSet<>();
    d.requires().forEach(r -> requires.add(r.name()));
    assertEquals(
        new TreeSet<>(
            Set.of(
                "dev.lease.core",
                "dev.lease.jdbc",
                "java.base",
                "java.instrument",
                "java.sql",
                "net.bytebuddy",
                "org.slf4j")),
        requires);
  }
}
