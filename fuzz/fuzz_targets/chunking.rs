#![no_main]
//! See `loopbreak_fuzz::check_chunking` for what this target asserts.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    loopbreak_fuzz::check_chunking(data);
});
