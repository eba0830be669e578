#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| memtide_testkit::fuzz::catalog::check(data));
