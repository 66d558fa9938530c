package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import net.bytebuddy.jar.asm.Type;
import org.junit.jupiter.api.Test;

/**
 * The class-loader guard of the weaving ({@link Instrumenter#seesAgent}) must cover every agent
 * class the inlined advice names: a woven class resolves them from its own loader, and one that
 * fails inside the suppressed advice would let the exit advice hand out the driver's connection
 * unfenced. The list is read from the advice's bytecode, so a new reference cannot be forgotten.
 */
class AdviceReferencesTest {

  private static final List<Class<?>> ADVICE =
      List.of(
          ConnectionAdvice.class,
          MethodLeaseAdvice.class,
          PoolInternalAdvice.class,
          StatementAdvice.class,
          XaAdvice.class);

  @Test
  void theGuardCoversEveryAgentClassTheAdviceNames() throws IOException {
    Set<String> named = new TreeSet<>();
    for (Class<?> advice : ADVICE) {
      collect(advice, named);
    }
    Set<String> guarded = new TreeSet<>();
    Instrumenter.ADVICE_REFERENCES.forEach(c -> guarded.add(c.getName()));
    assertTrue(
        named.contains(ConnectionFencing.Entry.class.getName()),
        "the reading of the bytecode sees the entry record: " + named);
    assertEquals(named, guarded, "agent classes named by the advice vs the guard's list");
  }

  @Test
  void aLoaderThatCannotResolveTheEntryToTheAgentsIsRefused() {
    ClassLoader agent = AdviceReferencesTest.class.getClassLoader();
    ClassLoader hidesEntry = new Hiding(agent, ConnectionFencing.Entry.class.getName());
    // the control: the guard before this test resolved ConnectionFencing alone, and passes here
    assertTrue(resolvesToAgent(hidesEntry, ConnectionFencing.class));
    assertFalse(Instrumenter.seesAgent(hidesEntry));
    assertTrue(Instrumenter.seesAgent(agent));
  }

  @Test
  void aLoaderWithoutTheXaTrackingIsRefused() {
    ClassLoader agent = AdviceReferencesTest.class.getClassLoader();
    assertFalse(Instrumenter.seesAgent(new Hiding(agent, XaTracking.class.getName())));
    assertSame(ConnectionFencing.class, loadQuietly(agent, ConnectionFencing.class.getName()));
  }

  private static boolean resolvesToAgent(ClassLoader loader, Class<?> c) {
    return loadQuietly(loader, c.getName()) == c;
  }

  private static Class<?> loadQuietly(ClassLoader loader, String name) {
    try {
      return Class.forName(name, false, loader);
    } catch (ClassNotFoundException e) {
      return null;
    }
  }

  /** Delegates to the agent's loader except for one class name, which it cannot find. */
  private static final class Hiding extends ClassLoader {
    private final String hidden;

    Hiding(ClassLoader parent, String hidden) {
      super(null);
      this.hidden = hidden;
      this.delegate = parent;
    }

    private final ClassLoader delegate;

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (name.equals(hidden)) {
        throw new ClassNotFoundException(name);
      }
      return delegate.loadClass(name);
    }
  }

  /** Agent classes (other than the advice's own annotations) named by the advice's methods. */
  private static void collect(Class<?> advice, Set<String> into) throws IOException {
    try (InputStream in =
        advice.getResourceAsStream(
            advice.getName().substring(advice.getPackageName().length() + 1) + ".class")) {
      ClassReader reader = new ClassReader(in.readAllBytes());
      reader.accept(
          new ClassVisitor(Opcodes.ASM9) {
            @Override
            public void visitInnerClass(String name, String outer, String inner, int access) {
              // nested advice classes (XaAdvice's) are read too; annotations are bound at weaving
              if (outer != null
                  && outer.equals(Type.getInternalName(advice))
                  && (access & Opcodes.ACC_ANNOTATION) == 0) {
                try {
                  collect(Class.forName(name.replace('/', '.')), into);
                } catch (ClassNotFoundException | IOException e) {
                  throw new IllegalStateException(e);
                }
              }
            }

            @Override
            public MethodVisitor visitMethod(
                int access, String name, String descriptor, String signature, String[] ex) {
              if (name.equals("<init>")) {
                return null; // never inlined
              }
              Type method = Type.getMethodType(descriptor);
              add(method.getReturnType(), into);
              for (Type t : method.getArgumentTypes()) {
                add(t, into);
              }
              return new MethodVisitor(Opcodes.ASM9) {
                @Override
                public void visitMethodInsn(int op, String owner, String n, String d, boolean itf) {
                  add(Type.getObjectType(owner), into);
                  Type m = Type.getMethodType(d);
                  add(m.getReturnType(), into);
                  for (Type t : m.getArgumentTypes()) {
                    add(t, into);
                  }
                }

                @Override
                public void visitFieldInsn(int op, String owner, String n, String d) {
                  add(Type.getObjectType(owner), into);
                  add(Type.getType(d), into);
                }

                @Override
                public void visitTypeInsn(int op, String type) {
                  add(Type.getObjectType(type), into);
                }
              };
            }
          },
          ClassReader.SKIP_DEBUG);
    }
  }

  private static void add(Type t, Set<String> into) {
    while (t.getSort() == Type.ARRAY) {
      t = t.getElementType();
    }
    if (t.getSort() == Type.OBJECT
        && t.getClassName().startsWith("dev.lease.agent.")
        && !t.getClassName().contains("Advice")) {
      into.add(t.getClassName());
    }
  }
}
