// The AI SDK scenario (scenario.mjs) in a Node app, over an in-memory
// store; prints what it observed as JSON for tests/apps/ai-sdk.test.mjs.
import { Memory } from "memtide";
import { converse } from "./scenario.mjs";

const mem = await Memory.open({ storage: "memory" });
const observed = await converse(mem);
await mem.close();
console.log(JSON.stringify(observed));
