// What `require("memtide")` finds: memtide is an ES module only.
throw new Error(
  'memtide is an ES module and cannot be loaded with require(). Use `import { Memory } from "memtide"`, ' +
    'or from CommonJS `const { Memory } = await import("memtide")`.',
);
