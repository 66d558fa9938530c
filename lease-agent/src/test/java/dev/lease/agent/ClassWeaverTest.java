package dev.lease.agent;

import static net.bytebuddy.matcher.ElementMatchers.any;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.example.weaving.Plain;
import com.example.weaving.SampleDriver;
import java.io.InputStream;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.lang.instrument.UnmodifiableClassException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import net.bytebuddy.description.type.TypeDescription;
import org.junit.jupiter.api.Test;

/**
 * The agent's transformer, on its own (issue 37): what reaches the rules, what a failure reports,
 * and the order of its installation. The weaving it does for the agent is checked end to end by the
 * integration tests (every woven class of the supported drivers and pools runs under them).
 */
class ClassWeaverTest {

  /** What the listener heard, in order. */
  private static final class Heard implements ClassWeaver.Listener {
    final List<String> events = new ArrayList<>();

    @Override
    public synchronized void woven(TypeDescription type, boolean retransformed) {
      events.add("woven " + type.getName() + (retransformed ? " (retransformed)" : ""));
    }

    @Override
    public synchronized void failed(String type, ClassLoader loader, Throwable error) {
      events.add("failed " + type + ": " + error.getMessage());
    }

    @Override
    public synchronized void refused(Class<?> type, Throwable error) {
      events.add("refused " + type.getName());
    }
  }

  private static byte[] classFile(Class<?> c) throws Exception {
    try (InputStream in =
        c.getClassLoader().getResourceAsStream(c.getName().replace('.', '/') + ".class")) {
      return in.readAllBytes();
    }
  }

  private static String internal(Class<?> c) {
    return c.getName().replace('.', '/');
  }

  private final ClassLoader loader = ClassWeaverTest.class.getClassLoader();
  private final Heard heard = new Heard();
  private final List<String> described = new ArrayList<>();

  /** A weaver whose one rule records every type it is asked about and weaves SampleDriver. */
  private ClassWeaver weaver(ClassWeaver.Step step) {
    return new ClassWeaver(
        List.of(
            new ClassWeaver.Rule(
                type -> {
                  described.add(type.getName());
                  return type.getName().equals(SampleDriver.class.getName());
                },
                any(),
                step)),
        new JdbcPrefilter.Decision(name -> false),
        heard);
  }

  @Test
  void aMatchedJdbcClassIsWovenAndAClassThatNeverMentionsJdbcIsNotEvenDescribed() throws Exception {
    ClassWeaver w = weaver((b, type, l) -> b);
    assertNotNull(
        w.transform(
            loader, internal(SampleDriver.class), null, null, classFile(SampleDriver.class)));
    assertNull(w.transform(loader, internal(Plain.class), null, null, classFile(Plain.class)));
    assertEquals(List.of(SampleDriver.class.getName()), described);
    assertEquals(List.of("woven " + SampleDriver.class.getName()), heard.events);
  }

  @Test
  void theBootLoaderAndTheIgnoredPrefixesAreNeverDescribed() throws Exception {
    ClassWeaver w = weaver((b, type, l) -> b);
    byte[] bytes = classFile(SampleDriver.class);
    assertNull(w.transform(null, internal(SampleDriver.class), null, null, bytes));
    assertNull(w.transform(loader, "dev/lease/agent/Anything", null, null, bytes));
    assertNull(w.transform(loader, null, null, null, bytes));
    assertEquals(List.of(), described);
  }

  @Test
  void aRuleThatFailsIsReportedWithTheClassNameAndTheClassIsLeftAsItIs() throws Exception {
    ClassWeaver w =
        weaver(
            (b, type, l) -> {
              throw new IllegalStateException("boom");
            });
    assertNull(
        w.transform(
            loader, internal(SampleDriver.class), null, null, classFile(SampleDriver.class)));
    assertEquals(List.of("failed " + SampleDriver.class.getName() + ": boom"), heard.events);
  }

  @Test
  void aClassLoadedWhileAClassIsWovenIsNotExaminedInsideIt() throws Exception {
    byte[] bytes = classFile(SampleDriver.class);
    ClassWeaver[] self = new ClassWeaver[1];
    List<byte[]> nested = new ArrayList<>();
    self[0] =
        weaver(
            (b, type, l) -> {
              nested.add(
                  self[0].transform(loader, internal(SampleDriver.class), null, null, bytes));
              return b;
            });
    assertNotNull(self[0].transform(loader, internal(SampleDriver.class), null, null, bytes));
    assertEquals(1, nested.size());
    assertNull(nested.get(0));
  }

  /**
   * The classes loaded before the agent are chosen after the transformer is registered, and a woven
   * class the JVM refuses is reported (it would run unwoven); a class that was not woven is not.
   */
  @Test
  void installRegistersFirstThenRetransformsAndReportsARefusedWovenClass() throws Exception {
    ClassWeaver w = weaver((b, type, l) -> b);
    List<String> calls = new ArrayList<>();
    Instrumentation inst =
        (Instrumentation)
            Proxy.newProxyInstance(
                loader,
                new Class<?>[] {Instrumentation.class},
                (proxy, method, args) -> {
                  switch (method.getName()) {
                    case "addTransformer":
                      calls.add("addTransformer");
                      return null;
                    case "retransformClasses":
                      Class<?> c = ((Class<?>[]) args[0])[0];
                      calls.add("retransform " + c.getSimpleName());
                      ((ClassFileTransformer) w)
                          .transform(loader, internal(c), c, null, classFile(c));
                      throw new UnmodifiableClassException("refused by the test");
                    default:
                      throw new UnsupportedOperationException(method.getName());
                  }
                });
    w.install(
        inst,
        () -> {
          calls.add("candidates");
          return new java.util.LinkedHashSet<>(List.of(SampleDriver.class, Plain.class));
        });
    assertEquals(
        List.of("addTransformer", "candidates", "retransform SampleDriver", "retransform Plain"),
        calls);
    assertEquals(
        List.of(
            "woven " + SampleDriver.class.getName() + " (retransformed)",
            "refused " + SampleDriver.class.getName()),
        heard.events);
  }
}
