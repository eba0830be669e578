#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| memtide_fuzz::memory_tool::check(data));
