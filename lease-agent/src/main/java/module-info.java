/**
 * The {@code -javaagent} that fences an unchanged application's connections. Nothing is exported:
 * the agent's only entry points are {@code premain}/{@code agentmain}, which the JVM calls on the
 * class path, where a -javaagent jar is always loaded (an unnamed module: this descriptor is not
 * read there). It states and checks at compile time what the agent uses: lease-jdbc's fence and
 * lease-core, each through its API and the internals they export to this module only, ByteBuddy and
 * SLF4J (both relocated inside the shaded jar, which carries no descriptor: the shade plugin drops
 * it, since it would name the unrelocated packages).
 */
module dev.lease.agent {
  requires dev.lease.jdbc;
  requires dev.lease.core;
  requires java.instrument;
  requires java.sql;
  requires net.bytebuddy;
  requires org.slf4j;
}
