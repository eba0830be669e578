// The package's failures, as the tests of tests/js expect them: a
// MemtideError (an Error) with its stable code and a message that says
// something (and, optionally, matches `pattern`).
import assert from "node:assert/strict";
import { MemtideError } from "../../dist/memtide/node.js";

export async function rejectsWith(promise, code, pattern) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof MemtideError, `expected a MemtideError, got ${error}`);
    assert.ok(error instanceof Error);
    assert.equal(error.code, code, error.message);
    assert.ok(error.message.length > 10, error.message);
    if (pattern) assert.match(error.message, pattern);
    return true;
  });
}
