package com.example.weaving;

/** A class that never mentions JDBC, for {@code ClassWeaverTest}. */
public final class Plain {}
