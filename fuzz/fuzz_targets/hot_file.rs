#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| memtide_testkit::fuzz::hot_file::check(data));
