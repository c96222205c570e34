#![no_main]
//! See `loopbreak_fuzz::check_scan` for what this target asserts.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    loopbreak_fuzz::check_scan(data);
});
