//! Gives the Python binding PyO3's view of the interpreter it is built for (the `PyPy`,
//! `GraalPy` and `Py_LIMITED_API` cfgs), so that `rust/python/input.rs` reads a `str` in place
//! only where that is sound and takes the portable path elsewhere.

fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
