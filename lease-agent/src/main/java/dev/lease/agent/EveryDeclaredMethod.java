package dev.lease.agent;

import java.util.HashMap;
import java.util.Map;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.description.field.FieldDescription;
import net.bytebuddy.description.field.FieldList;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.method.MethodList;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.implementation.Implementation;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.pool.TypePool;
import net.bytebuddy.utility.OpenedClassReader;

/**
 * Applies advice to every method of the class file that matches, bridge methods included.
 *
 * <p>ByteBuddy's own {@code Advice.on(..)} only sees the methods of its method graph, which merges
 * a bridge into the method it bridges to. A driver whose {@code connect} returns its own Connection
 * type (MariaDB's {@code org.mariadb.jdbc.Driver}; sqlite's {@code
 * SQLiteDataSource.getConnection(user, password)}) is called by DriverManager and pools through the
 * synthetic bridge with the {@code java.sql.Connection} signature, and only there may a fenced
 * connection be returned. This wrapper sees the class file's methods as they are.
 */
final class EveryDeclaredMethod extends AsmVisitorWrapper.AbstractBase {

  private final ElementMatcher<? super MethodDescription> matcher;
  private final Advice advice;

  EveryDeclaredMethod(ElementMatcher<? super MethodDescription> matcher, Advice advice) {
    this.matcher = matcher;
    this.advice = advice;
  }

  @Override
  public ClassVisitor wrap(
      TypeDescription type,
      ClassVisitor visitor,
      Implementation.Context context,
      TypePool pool,
      FieldList<FieldDescription.InDefinedShape> fields,
      MethodList<?> methods,
      int writerFlags,
      int readerFlags) {
    Map<String, MethodDescription> matched = new HashMap<>();
    for (MethodDescription m : type.getDeclaredMethods()) {
      if (matcher.matches(m)) {
        matched.put(m.getInternalName() + m.getDescriptor(), m);
      }
    }
    if (matched.isEmpty()) {
      return visitor;
    }
    return new ClassVisitor(OpenedClassReader.ASM_API, visitor) {
      @Override
      public MethodVisitor visitMethod(
          int access, String name, String descriptor, String signature, String[] exceptions) {
        MethodVisitor mv = super.visitMethod(access, name, descriptor, signature, exceptions);
        MethodDescription m = matched.get(name + descriptor);
        return m == null || mv == null
            ? mv
            : advice.wrap(type, m, mv, context, pool, writerFlags, readerFlags);
      }
    };
  }
}
