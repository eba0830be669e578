#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| memtide_fuzz::kv_journal::check(data));
