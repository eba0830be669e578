#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mnemo_fuzz::memory_path::check(data));
