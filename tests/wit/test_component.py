"""Python tests of memtide's WebAssembly component (wit/) run by wasmtime.

The host is the PyPI `wasmtime` package (tests/wit/requirements.txt): a
component linker with WASI p2 and the `memtide:memory/storage` import
implemented in Python over a dict. Every verb, a reopen over the same
storage, bad input and a storage quota error. Run by scripts/test-wit.sh:

    python -m unittest -v tests/wit/test_component.py

The component is target/wasm32-wasip2/release/memtide_wit.wasm, or
$MEMTIDE_WIT_COMPONENT. Compiled code is cached by wasmtime (~/.cache/wasmtime).

wasmtime-py maps WIT values to Python: records are `Record` objects whose
attributes are the kebab-case field names (set with `setattr`), enums are
strings, options are the value or None, `list<u8>` is bytes, and a
`result` or `variant` is a `Variant(tag, payload)` when its cases' Python
classes overlap and the bare payload otherwise.
"""

import json
import os
import re
import unittest
from pathlib import Path

from wasmtime import Config, Engine, Store, WasiConfig
from wasmtime.component import Component, Linker, Record, ResourceAny, Variant

ROOT = Path(__file__).resolve().parents[2]
COMPONENT_PATH = os.environ.get(
    "MEMTIDE_WIT_COMPONENT", str(ROOT / "target/wasm32-wasip2/release/memtide_wit.wasm")
)
STORAGE = "memtide:memory/storage@0.2.0"
MEMORY = "memtide:memory/memory@0.2.0"

_config = Config()
_config.cache = True
ENGINE = Engine(_config)
COMPONENT = Component.from_file(ENGINE, COMPONENT_PATH)


def record(**fields):
    """A WIT record: Python keyword names, kebab-case attributes."""
    value = Record()
    for name, field in fields.items():
        setattr(value, name.replace("_", "-"), field)
    return value


def plain(value):
    """A lifted WIT value as plain Python data (records become dicts)."""
    if isinstance(value, Record):
        return {k: plain(v) for k, v in vars(value).items()}
    if isinstance(value, Variant):
        return {"tag": value.tag, "payload": plain(value.payload)}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


class MemtideError(Exception):
    """The component's `error` record: a code and a message."""

    def __init__(self, error):
        super().__init__(f"{error.code}: {error.message}")
        self.code = error.code
        self.message = error.message


def unwrap(value):
    """The `ok` payload of a lifted `result<T, error>`; raises MemtideError
    for `err`."""
    if isinstance(value, Variant):
        if value.tag == "err":
            raise MemtideError(value.payload)
        return value.payload
    if isinstance(value, Record) and set(vars(value)) == {"code", "message"}:
        raise MemtideError(value)
    return value


class DictStorage:
    """The host's key-value store: a dict of keys to bytes. `fail_put`,
    when set, is called with the key and returns a storage-error to fail
    the put with (`Variant("quota-exceeded", message)`), or None."""

    def __init__(self):
        self.data = {}
        self.fail_put = None

    def define(self, linker):
        def get(_store, key):
            return self.data.get(key)

        def put(_store, key, value):
            failure = self.fail_put(key) if self.fail_put else None
            if failure is not None:
                return failure
            self.data[key] = bytes(value)
            return None

        def delete(_store, key):
            self.data.pop(key, None)
            return None

        def list_keys(_store, prefix):
            return [k for k in self.data if k.startswith(prefix)]

        with linker.root() as root:
            with root.add_instance(STORAGE) as storage:
                storage.add_func("get", get)
                storage.add_func("put", put)
                storage.add_func("delete", delete)
                storage.add_func("list", list_keys)


class Instance:
    """One instance of the component over `storage`."""

    def __init__(self, storage):
        linker = Linker(ENGINE)
        linker.add_wasip2()
        storage.define(linker)
        self.store = Store(ENGINE)
        self.store.set_wasi(WasiConfig())
        self.instance = linker.instantiate(self.store, COMPONENT)
        self.memory = self.instance.get_export_index(self.store, MEMORY)

    def call(self, name, *args):
        """Calls the export `name` of `memory` and lifts its result."""
        index = self.instance.get_export_index(self.store, name, self.memory)
        func = self.instance.get_func(self.store, index)
        result = func(self.store, *args)
        func.post_return(self.store)
        return result

    def open(self, config=None):
        return MemoryStore(self, unwrap(self.call("[static]store.open", config)))


class MemoryStore:
    """The `store` resource: each method calls `[method]store.<name>`."""

    def __init__(self, instance, handle):
        assert isinstance(handle, ResourceAny)
        self.instance = instance
        self.handle = handle

    def __getattr__(self, name):
        # `import_`: `import` is a Python keyword.
        method = "[method]store." + name.rstrip("_").replace("_", "-")
        return lambda *args: unwrap(self.instance.call(method, self.handle, *args))

    def close(self):
        self.handle.drop(self.instance.store)


def scope(user_id, workspace_id, project_id=None):
    return record(
        user_id=user_id,
        workspace_id=workspace_id,
        project_id=project_id,
        card_id=None,
        session_id=None,
    )


def scope_filter(user_id=None, workspace_id=None):
    return record(
        user_id=user_id,
        workspace_id=workspace_id,
        project_id=None,
        card_id=None,
        session_id=None,
        metadata=None,
    )


def memory_input(text, in_scope, **extra):
    fields = dict(
        text=text,
        scope=in_scope,
        kind=None,
        status=None,
        pinned=None,
        source=None,
        tags=None,
        privacy=None,
        created_at=None,
        key=None,
        metadata=None,
        role=None,
        speaker=None,
        supersede=None,
    )
    fields.update(extra)
    return record(**fields)


def retrieve_query(text, in_scope, **extra):
    fields = dict(
        text=text,
        scope=in_scope,
        limit=None,
        kinds=None,
        roles=None,
        tags=None,
        since=None,
        until=None,
        metadata=None,
        dry_run=False,
        explain=False,
        include_pending=False,
        include_pii=False,
        min_relevance=None,
        sessions=None,
        scope_order=None,
    )
    fields.update(extra)
    return record(**fields)


def list_query(**extra):
    fields = dict(
        scope=None,
        kinds=None,
        statuses=None,
        roles=None,
        tags=None,
        pinned=None,
        include_deleted=False,
        since=None,
        until=None,
        limit=None,
        cursor=None,
        include_superseded=None,
    )
    fields.update(extra)
    return record(**fields)


def patch(**extra):
    fields = dict(
        text=None,
        kind=None,
        status=None,
        pinned=None,
        tags=None,
        privacy=None,
        source=None,
        metadata=None,
        deleted=None,
        role=None,
        speaker=None,
    )
    fields.update(extra)
    return record(**fields)


HOME = scope("alice", "home")
WORK = scope("alice", "work", project_id="apollo")


def inputs():
    return [
        memory_input(
            "I take my coffee as a cortado, no sugar.",
            HOME,
            kind="preference",
            tags=["coffee"],
        ),
        memory_input("The spare key is under the blue flower pot.", HOME, kind="fact", pinned=True),
        memory_input(
            "The Apollo launch review moved to Thursday at 10am.",
            WORK,
            source=record(kind="message", ref="msg-42", uri="chat://apollo/42"),
            created_at="2024-05-08T13:56:00+02:00",
        ),
        memory_input(
            "My phone number is 555-0100.",
            HOME,
            privacy=record(pii=True, private=False, retention_days=None),
        ),
    ]


class ComponentTest(unittest.TestCase):
    def assert_error(self, code, fn, *args):
        with self.assertRaises(MemtideError) as caught:
            fn(*args)
        self.assertEqual(caught.exception.code, code, caught.exception.message)
        return caught.exception

    def test_every_verb_round_trips(self):
        storage = DictStorage()
        store = Instance(storage).open()

        results = store.ingest(inputs())
        self.assertEqual([r.outcome for r in results], ["added"] * 4)
        coffee, key, launch, phone = [r.id for r in results]
        self.assertRegex(coffee, r"^[0-9A-Z]{26}$")
        again = store.ingest([memory_input("I take my coffee as a cortado, no sugar.", HOME)])
        self.assertEqual((again[0].outcome, again[0].reason, again[0].id), ("merged", "duplicate", coffee))

        hits = store.retrieve(retrieve_query("how do I like my coffee?", HOME, explain=True))
        self.assertEqual(hits[0].item.id, coffee)
        self.assertEqual(hits[0].item.tags, ["coffee"])
        self.assertGreater(hits[0].explain.lexical, 0.0)
        self.assertIsNone(hits[0].explain.semantic)
        admitted = hits[0].policy
        self.assertEqual(getattr(admitted, "scope-fields"), ["userId", "workspaceId"])
        self.assertEqual((admitted.pii, getattr(admitted, "expires-at"), admitted.filters), (False, None, []))
        self.assertNotIn(phone, [h.item.id for h in hits])
        self.assertNotIn(launch, [h.item.id for h in hits])
        self.assertEqual(getattr(store.get(coffee), "usage-count"), 1)

        injection = store.inject(
            record(query=retrieve_query("coffee order", HOME), budget_tokens=200, format=None, preamble=None, pinned_share=None, archive=None)
        )
        self.assertEqual(injection.used[0], key)
        self.assertIn(coffee, injection.used)
        tag = next(c.tag for c in injection.citations if c.id == coffee)
        self.assertIn(f"[{tag}]", injection.block)
        self.assertNotIn(coffee, injection.block)
        # Under the default gate a question about nothing the store holds
        # (one weak word in common) injects only the pinned memory; with the
        # gate at 0 the weak match comes back.
        unrelated = "Which trombone teacher in Oslo likes sugar?"
        gated = store.inject(
            record(query=retrieve_query(unrelated, HOME, dry_run=True), budget_tokens=200, format=None, preamble="", pinned_share=None, archive=None)
        )
        self.assertEqual(gated.used, [key])
        self.assertTrue(gated.block.startswith("<memories>\n- [m1] "), gated.block)
        open_gate = store.inject(
            record(
                query=retrieve_query(unrelated, HOME, dry_run=True, min_relevance=0.0),
                budget_tokens=200, format=None, preamble=None, pinned_share=None, archive=None,
            )
        )
        self.assertEqual(open_gate.used, [key, coffee])
        weak = store.retrieve(retrieve_query(unrelated, HOME, dry_run=True))
        self.assertEqual([h.item.id for h in weak], [coffee])
        self.assertTrue(0.0 < weak[0].relevance < 0.3, weak[0].relevance)
        self.assertEqual(store.retrieve(retrieve_query(unrelated, HOME, dry_run=True, min_relevance=0.3)), [])
        self.assertTrue(injection.estimated)
        xml = store.inject(record(query=retrieve_query("coffee", HOME), budget_tokens=200, format="xml", preamble=None, pinned_share=None, archive=None))
        self.assertIn("<memory ", xml.block)

        item = store.get(launch)
        self.assertEqual(getattr(item, "created-at"), "2024-05-08T11:56:00.000Z")
        self.assertEqual(plain(item.source), {"kind": "message", "ref": "msg-42", "uri": "chat://apollo/42"})
        self.assertEqual(getattr(item.scope, "project-id"), "apollo")

        page = store.list(list_query(scope=scope_filter("alice", "home"), limit=2))
        self.assertEqual(len(page.items), 2)
        rest = store.list(list_query(scope=scope_filter("alice", "home"), cursor=getattr(page, "next-cursor")))
        self.assertEqual(len(page.items) + len(rest.items), 3)
        self.assertEqual([i.id for i in store.list(list_query(kinds=["fact"])).items], [key])

        updated = store.update(coffee, patch(text="I take my coffee as a flat white.", tags=["coffee", "milk"]))
        self.assertEqual(updated.text, "I take my coffee as a flat white.")
        self.assertEqual(store.retrieve(retrieve_query("flat white", HOME))[0].item.id, coffee)

        store.delete(phone, False)
        self.assertIsNotNone(getattr(store.get(phone), "deleted-at"))
        store.delete(phone, True)
        self.assert_error("not-found", store.get, phone)

        stats = store.stats(None)
        self.assertEqual((stats.items, stats.active, stats.pinned, stats.tenants), (3, 3, 1, 2))
        self.assertEqual(getattr(stats, "retrieval-mode"), "lexical")
        self.assertEqual(
            plain(getattr(stats, "by-kind")),
            [
                {"kind": "episodic", "count": 1},
                {"kind": "preference", "count": 1},
                {"kind": "fact", "count": 1},
            ],
        )
        self.assertEqual(store.stats(scope_filter(workspace_id="work")).items, 1)

        exported = store.export(None)
        self.assertEqual(json.loads(exported)["format"], "mnemo-export")
        copy = Instance(DictStorage()).open()
        self.assertEqual(plain(copy.import_(exported)), {"added": 3, "replaced": 0, "merged": 0, "files": 0})
        self.assertEqual(plain(copy.get(coffee)), plain(store.get(coffee)))

        deleted = store.delete_all(scope_filter("alice", "work"), True)
        self.assertEqual(plain(deleted), {"deleted": 1, "hard": True, "summaries": 0})
        self.assertFalse(store.refresh())
        self.assertFalse(any(k.startswith("journal/") for k in storage.data))
        store.close()

    def test_reopen_over_the_same_storage(self):
        storage = DictStorage()
        first = Instance(storage).open()
        ids = [r.id for r in first.ingest(inputs())]
        first.update(ids[0], patch(pinned=True))
        first.delete(ids[3], False)
        first.retrieve(retrieve_query("coffee", HOME))
        before = (
            [plain(first.get(i)) for i in ids],
            plain(first.list(list_query(include_deleted=True))),
            plain(first.stats(None)),
            json.loads(first.export(None))["items"],
        )
        first.close()

        reopened = Instance(storage).open()
        after = (
            [plain(reopened.get(i)) for i in ids],
            plain(reopened.list(list_query(include_deleted=True))),
            plain(reopened.stats(None)),
            json.loads(reopened.export(None))["items"],
        )
        self.assertEqual(after, before)
        hits = reopened.retrieve(retrieve_query("coffee", HOME, dry_run=True))
        self.assertEqual(hits[0].item.id, ids[0])
        suppressed = reopened.ingest([memory_input("My phone number is 555-0100.", HOME)])
        self.assertEqual(suppressed[0].reason, "suppressed")

    def test_bad_input_is_invalid_input_and_the_store_stays_usable(self):
        storage = DictStorage()
        store = Instance(storage).open()
        store.ingest(inputs()[:1])
        before = dict(storage.data)

        bad = inputs()[2]
        setattr(bad, "created-at", "yesterday")
        error = self.assert_error("invalid-input", store.ingest, [inputs()[1], bad])
        self.assertRegex(error.message, re.escape("inputs[1]: createdAt: `yesterday`"))
        self.assert_error("invalid-input", store.ingest, [memory_input("x", scope("", "home"))])
        self.assert_error("invalid-input", store.get, "../etc/passwd")
        self.assert_error("too-large", store.ingest, [memory_input("x" * 70_000, HOME)])
        self.assert_error("corrupt", store.import_, "{not json")
        self.assertEqual(storage.data, before)

        self.assertEqual(store.ingest(inputs()[1:2])[0].outcome, "added")
        self.assertEqual(store.stats(None).items, 2)
        self.assert_error("invalid-input", Instance(DictStorage()).open, '{"nope": 1}')

    def test_apply_operations_supersedes_in_one_commit_or_changes_nothing(self):
        storage = DictStorage()
        store = Instance(storage).open()
        coffee = store.ingest(inputs()[:1])[0].id
        reply = "Done:\n```json\n" + json.dumps(
            [
                {"op": "update", "id": coffee, "text": "I switched to flat whites."},
                {"op": "add", "text": "Lives in Porto"},
            ]
        ) + "\n```"
        done = store.apply_operations(HOME, [coffee], reply)
        self.assertEqual(len(done.added), 2)
        self.assertEqual(plain(done.superseded), [{"id": coffee, "by": done.added[0]}])
        self.assertEqual(getattr(store.get(coffee), "superseded-by"), done.added[0])
        self.assertEqual(store.get(done.added[0]).supersedes, [coffee])
        last = store.history(coffee)[-1]
        self.assertEqual((last.event, last.other), ("superseded", done.added[0]))
        before = dict(storage.data)
        self.assert_error("invalid-operations", store.apply_operations, HOME, [coffee], "no JSON here")
        unknown = json.dumps([{"op": "add", "text": "ok"}, {"op": "delete", "id": "01NOTSHOWN"}])
        self.assert_error("invalid-operations", store.apply_operations, HOME, [coffee], unknown)
        self.assertEqual(storage.data, before)

    def test_storage_quota_error_is_quota_exceeded_and_changes_nothing(self):
        storage = DictStorage()
        store = Instance(storage).open()
        coffee = store.ingest(inputs()[:2])[0].id
        before = dict(storage.data)
        listed = plain(store.list(list_query()))

        storage.fail_put = lambda key: Variant("quota-exceeded", "the host store is full")
        error = self.assert_error("quota-exceeded", store.ingest, inputs()[2:])
        self.assertIn("the host store is full", error.message)
        self.assert_error("quota-exceeded", store.update, coffee, patch(pinned=True))
        self.assertEqual(storage.data, before)
        self.assertEqual(plain(store.list(list_query())), listed)

        # The manifest's put is the commit point of a small write (docs/format.md, 2.2).
        storage.fail_put = lambda key: Variant("other", "disk on fire") if key == "meta/manifest" else None
        self.assert_error("storage", store.ingest, inputs()[2:])
        self.assertEqual(storage.data, before)

        storage.fail_put = None
        self.assertEqual(store.ingest(inputs()[2:3])[0].outcome, "added")
        self.assertEqual(Instance(storage).open().stats(None).items, 3)

    def test_files_memory_tool_and_hot_file_round_trip(self):
        storage = DictStorage()
        store = Instance(storage).open()

        notes = "# Notes\nThe espresso machine is descaled every Sunday.\n"
        sync = store.sync_file(HOME, "notes/MEMORY.md", notes)
        self.assertEqual((sync.path, sync.outcome, sync.removed, len(sync.chunks)), ("notes/MEMORY.md", "created", 0, 1))
        again = store.sync_file(HOME, "notes/MEMORY.md", notes)
        self.assertEqual((again.outcome, again.chunks), ("unchanged", sync.chunks))
        stored = store.file(HOME, "notes/MEMORY.md")
        self.assertEqual(stored.content, notes)
        self.assertRegex(getattr(stored, "content-hash"), r"^[0-9a-f]{64}$")
        self.assertEqual(plain(stored.scope), plain(HOME))
        self.assertIsNone(store.file(HOME, "nope.md"))
        self.assertIsNone(store.file(WORK, "notes/MEMORY.md"))
        chunk = store.get(sync.chunks[0])
        self.assertEqual(plain(getattr(chunk, "source-lines")), {"start": 1, "end": 2})
        self.assertEqual(plain(chunk.source), {"kind": "file", "ref": "notes/MEMORY.md", "uri": None})
        hits = store.retrieve(retrieve_query("when is the espresso machine descaled", HOME))
        self.assertEqual(hits[0].item.id, chunk.id)
        injection = store.inject(
            record(query=retrieve_query("espresso descaled", HOME), budget_tokens=500, format=None, preamble=None, pinned_share=None, archive=None)
        )
        tag = next(c.tag for c in injection.citations if c.id == chunk.id)
        self.assertIn(f"[{tag}] [notes/MEMORY.md#L1-L2]", injection.block)
        self.assertIsNone(getattr(store.get(store.ingest([memory_input("plain", HOME)])[0].id), "source-lines"))
        self.assert_error("invalid-input", store.sync_file, HOME, "a/../b.md", "x")
        self.assertTrue(store.remove_file(HOME, "notes/MEMORY.md"))
        self.assertFalse(store.remove_file(HOME, "notes/MEMORY.md"))
        self.assert_error("not-found", store.get, chunk.id)

        def tool(**input):
            result = store.memory_tool(HOME, json.dumps(input))
            return (result.content, getattr(result, "is-error"))

        self.assertEqual(
            tool(command="create", path="/memories/prefs.md", file_text="# Preferences\n- coffee: cortado\n"),
            ("File created successfully at: /memories/prefs.md", False),
        )
        self.assertEqual(
            tool(command="view", path="/memories/prefs.md", view_range=[2, 2]),
            ("Here's the content of /memories/prefs.md with line numbers:\n     2\t- coffee: cortado", False),
        )
        self.assertEqual(
            tool(command="rename", old_path="/memories/prefs.md", new_path="/memories/p.md"),
            ("Successfully renamed /memories/prefs.md to /memories/p.md", False),
        )
        top = store.retrieve(retrieve_query("cortado", HOME))[0]
        hit = top.item
        self.assertEqual((hit.source.ref, plain(getattr(hit, "source-lines"))), ("/memories/p.md", {"start": 1, "end": 2}))
        self.assertEqual(top.citation, "/memories/p.md#L1-L2")
        # An export carries the files (whole, or for the scopes a filter selects).
        exported = store.export(None)
        self.assertEqual([f["path"] for f in json.loads(exported)["files"]], ["/memories/p.md"])
        copy = Instance(DictStorage()).open()
        self.assertEqual(copy.import_(exported).files, 1)
        self.assertEqual(plain(copy.file(HOME, "/memories/p.md")), plain(store.file(HOME, "/memories/p.md")))
        work_only = json.loads(store.export(scope_filter(workspace_id="work")))
        self.assertEqual((work_only["items"], work_only["version"]), ([], 1))
        before = dict(storage.data)
        for path, shown, reason in [
            ("/memories/../etc/passwd", "/memories/../etc/passwd", "`.` and `..` path segments are not allowed"),
            ("/memories/%2e%2e%2fetc", "/memories/%2e%2e%2fetc", "percent-encoded sequences (such as `%2e`) are not allowed in paths"),
            ("/etc/passwd", "/etc/passwd", "the path must be /memories or lie under /memories"),
            ("/memories\\..\\etc", "/memories\\\\..\\\\etc", "backslashes are not allowed in paths"),
            ("/memories/a\0b", "/memories/a\\0b", "control characters are not allowed in paths"),
        ]:
            self.assertEqual(
                tool(command="create", path=path, file_text="x"),
                (f"Error: The path {shown} is not allowed: {reason}", True),
            )
        self.assertEqual(storage.data, before)
        self.assert_error("invalid-input", store.memory_tool, HOME, "{not json")

        coffee = store.ingest([memory_input("coffee black", HOME, pinned=True)])[0].id
        rendered = store.render_hot_file(HOME, "# Me\n")
        self.assertEqual(
            rendered,
            f"# Me\n\n<!-- mnemo:begin pinned -->\n- coffee black <!-- mnemo:id={coffee} -->\n<!-- mnemo:end pinned -->\n",
        )
        read = store.read_hot_file(HOME, "USER.md", rendered.replace("coffee black", "coffee white"))
        self.assertEqual(plain(read), {"added": [], "updated": [coffee], "pinned": [], "unpinned": []})
        self.assert_error("invalid-input", store.render_hot_file, HOME, "<!-- mnemo:begin pinned -->\n")
        store.close()

        reopened = Instance(storage).open()
        self.assertEqual(reopened.file(HOME, "/memories/p.md").content, "# Preferences\n- coffee: cortado\n")
        self.assertEqual(reopened.get(coffee).text, "coffee white")

    def test_summaries_and_session_recall(self):
        storage = DictStorage()
        store = Instance(storage).open()
        s1 = record(user_id="alice", workspace_id="chat", project_id=None, card_id=None, session_id="s1")
        s2 = record(user_id="alice", workspace_id="chat", project_id=None, card_id=None, session_id="s2")
        ids = [r.id for r in store.ingest([
            memory_input("We decided to repaint the kitchen green.", s1),
            memory_input("The kitchen door code is 4417.", s1),
        ])]
        ask = lambda sessions: [h.item.id for h in store.retrieve(
            retrieve_query("kitchen colour", s2, dry_run=True, sessions=sessions))]
        self.assertIn(ids[0], ask(None))
        self.assertIn(ids[0], ask("all"))
        self.assertNotIn(ids[0], ask("current"))

        context = store.summary_context(record(scope=s1, limit=None, include_pii=False))
        self.assertEqual([m.id for m in context.memories], ids)
        self.assertIsNone(context.previous)
        summary = store.store_summary(record(scope=s1, text="Kitchen: green; door code 4417.", sources=ids))
        self.assertEqual(summary.kind, "summary")
        self.assertEqual(getattr(summary, "summary-of"), sorted(ids))
        again = store.store_summary(record(scope=s1, text="Kitchen green.", sources=[ids[0]]))
        self.assertEqual(again.id, summary.id)
        self.assert_error("invalid-input", store.store_summary, record(scope=s2, text="x", sources=[ids[1]]))
        store.delete(ids[0], True)
        self.assert_error("not-found", store.get, summary.id)
        self.assertFalse(any(b"Kitchen green." in v for v in storage.data.values()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
