// Type-checks a TypeScript source as a user's strict project would
// (exactOptionalPropertyTypes, the DOM and ES2022 libraries, bundler
// resolution): the shared harness of the tests of the package's declarations.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";

/** The diagnostics of `source` written as `name`, each with its line. */
export async function typeErrors(name, source) {
  const dir = await mkdtemp(join(tmpdir(), "memtide-types-"));
  const file = join(dir, name);
  await writeFile(file, source);
  const program = ts.createProgram([file], {
    strict: true, noEmit: true, exactOptionalPropertyTypes: true, skipLibCheck: false,
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
  });
  const diagnostics = ts.getPreEmitDiagnostics(program);
  await rm(dir, { recursive: true, force: true });
  return diagnostics.map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    const line = where ? source.split("\n")[where.line]?.slice(0, 80) : "";
    return `${ts.flattenDiagnosticMessageText(d.messageText, "\n")}${where ? ` (${name}:${where.line + 1}: ${line})` : ""}`;
  });
}
