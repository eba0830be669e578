// webpack 5 with what `webpack` does by default, an ES module entry, and the
// page beside the bundle.
import { fileURLToPath } from "node:url";

export default {
  mode: "production",
  entry: fileURLToPath(new URL("../vite/index.js", import.meta.url)),
  output: { path: fileURLToPath(new URL("dist/", import.meta.url)), clean: true },
};
