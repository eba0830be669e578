#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mnemo_fuzz::hot_file::check(data));
