//! memtide's native integration tests, one module per area, in one binary:
//! every test binary links memtide with tract, so one link instead of one
//! per file. The tests that also run in the browser are `tests/portable/`;
//! those of the command-line tool, with the adversarial table it runs, are in
//! `crates/cli/tests/`.

mod conversation_order;
mod failpoints;
mod fault_model;
mod files;
mod first_write;
mod fuzz_regressions;
mod hot_file;
mod isolation_props;
mod keys;
mod layout;
mod lazy_rows;
mod locomo;
mod memory_tool;
mod messages;
mod near_duplicates;
mod policies;
mod progress;
mod prompt_injection;
mod ranking;
mod read_retention;
mod recall_scope;
mod relevance;
mod retention;
mod retrieve_allocations;
mod secrets;
mod segment_open;
mod semantic;
mod speakers;
mod summaries;
mod supersede;
mod vector_index;
mod wordpiece_golden;
