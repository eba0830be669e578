import { fileURLToPath } from "node:url";

// The apps share one install in tests/apps; without this Next.js guesses
// the workspace root from whichever lockfiles it finds above.
const root = fileURLToPath(new URL("..", import.meta.url));

export default { turbopack: { root }, outputFileTracingRoot: root };
