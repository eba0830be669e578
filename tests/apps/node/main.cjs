// A CommonJS app that require()s the package: it must be told to import it.
require("memtide");
