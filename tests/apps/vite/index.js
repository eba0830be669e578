// The entry of the Vite and webpack apps: the test reads `window.memtideApp`.
import { runApp } from "./main.js";

runApp().then((outcome) => {
  window.memtideApp = outcome;
});
