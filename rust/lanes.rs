//! How the window stores units, and compares 16 of them at once: the detector's inner loops are
//! these two masks. A stream's units are kept as narrow as they fit: `u8` while every unit is
//! below 256 (ASCII and Latin-1 text: 16 units per 128-bit compare), `u16` while they are in the
//! Basic Multilingual Plane, `u32` from the first that is not. On x86-64 the masks use SSE2,
//! which every x86-64 CPU has; elsewhere a plain loop the compiler may vectorise.

use std::fmt::Debug;

/// Units compared at once.
pub const LANES: usize = 16;

/// A stored unit.
pub trait Unit: Copy + Eq + Default + Debug + Into<u32> + Send + Sync + 'static {
    /// Whether every unit of `units` (bytes of ASCII, or code points and token ids) can be
    /// stored as `Self`.
    fn holds<S: Copy + Into<u32>>(units: &[S]) -> bool;
    /// `unit` as stored; it must be one `holds` accepts.
    fn store(unit: u32) -> Self;
    /// Bit `i` set where `units[i] == target`.
    fn equal_to(units: &[Self; LANES], target: Self) -> u32;
    /// Bit `i` set where `a[i] == b[i]`.
    fn equal_pairs(a: &[Self; LANES], b: &[Self; LANES]) -> u32;
}

impl Unit for u8 {
    fn holds<S: Copy + Into<u32>>(units: &[S]) -> bool {
        units.iter().fold(0, |all, &unit| all | unit.into()) <= u32::from(u8::MAX)
    }

    #[inline]
    fn store(unit: u32) -> u8 {
        unit as u8
    }

    #[inline]
    fn equal_to(units: &[u8; LANES], target: u8) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86-64 baseline; the unaligned load stays inside `units`.
        unsafe {
            use std::arch::x86_64::*;
            let eq = _mm_cmpeq_epi8(_mm_loadu_si128(units.as_ptr().cast()), _mm_set1_epi8(target as i8));
            _mm_movemask_epi8(eq) as u32
        }
        #[cfg(not(target_arch = "x86_64"))]
        fold_mask(units.iter().map(|&u| u == target))
    }

    #[inline]
    fn equal_pairs(a: &[u8; LANES], b: &[u8; LANES]) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `equal_to`.
        unsafe {
            use std::arch::x86_64::*;
            let eq = _mm_cmpeq_epi8(_mm_loadu_si128(a.as_ptr().cast()), _mm_loadu_si128(b.as_ptr().cast()));
            _mm_movemask_epi8(eq) as u32
        }
        #[cfg(not(target_arch = "x86_64"))]
        fold_mask(a.iter().zip(b).map(|(x, y)| x == y))
    }
}

impl Unit for u16 {
    fn holds<S: Copy + Into<u32>>(units: &[S]) -> bool {
        units.iter().fold(0, |all, &unit| all | unit.into()) <= u32::from(u16::MAX)
    }

    #[inline]
    fn store(unit: u32) -> u16 {
        unit as u16
    }

    #[inline]
    fn equal_to(units: &[u16; LANES], target: u16) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86-64 baseline; the unaligned loads stay inside `units`.
        unsafe {
            use std::arch::x86_64::*;
            let target = _mm_set1_epi16(target as i16);
            let p = units.as_ptr().cast::<__m128i>();
            let eq = |i| _mm_cmpeq_epi16(_mm_loadu_si128(p.add(i)), target);
            _mm_movemask_epi8(_mm_packs_epi16(eq(0), eq(1))) as u32
        }
        #[cfg(not(target_arch = "x86_64"))]
        fold_mask(units.iter().map(|&u| u == target))
    }

    #[inline]
    fn equal_pairs(a: &[u16; LANES], b: &[u16; LANES]) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `equal_to`.
        unsafe {
            use std::arch::x86_64::*;
            let (pa, pb) = (a.as_ptr().cast::<__m128i>(), b.as_ptr().cast::<__m128i>());
            let eq = |i| _mm_cmpeq_epi16(_mm_loadu_si128(pa.add(i)), _mm_loadu_si128(pb.add(i)));
            _mm_movemask_epi8(_mm_packs_epi16(eq(0), eq(1))) as u32
        }
        #[cfg(not(target_arch = "x86_64"))]
        fold_mask(a.iter().zip(b).map(|(x, y)| x == y))
    }
}

impl Unit for u32 {
    fn holds<S: Copy + Into<u32>>(_: &[S]) -> bool {
        true
    }

    #[inline]
    fn store(unit: u32) -> u32 {
        unit
    }

    #[inline]
    fn equal_to(units: &[u32; LANES], target: u32) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as for `u16`.
        unsafe {
            use std::arch::x86_64::*;
            let target = _mm_set1_epi32(target as i32);
            let p = units.as_ptr().cast::<__m128i>();
            let eq = |i| _mm_cmpeq_epi32(_mm_loadu_si128(p.add(i)), target);
            pack_quarters(eq(0), eq(1), eq(2), eq(3))
        }
        #[cfg(not(target_arch = "x86_64"))]
        fold_mask(units.iter().map(|&u| u == target))
    }

    #[inline]
    fn equal_pairs(a: &[u32; LANES], b: &[u32; LANES]) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as for `u16`.
        unsafe {
            use std::arch::x86_64::*;
            let (pa, pb) = (a.as_ptr().cast::<__m128i>(), b.as_ptr().cast::<__m128i>());
            let eq = |i| _mm_cmpeq_epi32(_mm_loadu_si128(pa.add(i)), _mm_loadu_si128(pb.add(i)));
            pack_quarters(eq(0), eq(1), eq(2), eq(3))
        }
        #[cfg(not(target_arch = "x86_64"))]
        fold_mask(a.iter().zip(b).map(|(x, y)| x == y))
    }
}

/// The positions of `target` (which fits every unit type) in a piece of at most `64 * N` units,
/// as a bitmap: one pass of vector compares, so a newline costs a bit scan, not a search.
#[derive(Clone, Copy, Debug)]
pub struct Marks<const N: usize> {
    bits: [u64; N],
    /// Words that hold units (a streamed delta of a few units needs one).
    words: usize,
}

impl<const N: usize> Marks<N> {
    pub fn of<S: Unit>(units: &[S], target: u8) -> Marks<N> {
        assert!(units.len() <= 64 * N);
        let target = S::store(u32::from(target));
        let mut bits = [0u64; N];
        for (word, units) in bits.iter_mut().zip(units.chunks(64)) {
            *word = match <&[S; 64]>::try_from(units) {
                Ok(units) => {
                    let found = |i: usize| u64::from(S::equal_to(units[i..i + LANES].try_into().expect("LANES"), target));
                    (0..64).step_by(LANES).fold(0, |word, i| word | found(i) << i)
                }
                Err(_) => units.iter().enumerate().fold(0, |word, (i, &unit)| word | u64::from(unit == target) << i),
            };
        }
        Marks { bits, words: units.len().div_ceil(64) }
    }

    /// The first marked index at or after `from`.
    pub fn next(&self, from: usize) -> Option<usize> {
        let held = &self.bits[..self.words];
        let mut word = from / 64;
        let mut bits = *held.get(word)? & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                return Some(word * 64 + bits.trailing_zeros() as usize);
            }
            word += 1;
            bits = *held.get(word)?;
        }
    }
}

/// Packs four 4-lane compare results (all ones or zeros per lane) into a 16-bit mask.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn pack_quarters(
    a: std::arch::x86_64::__m128i,
    b: std::arch::x86_64::__m128i,
    c: std::arch::x86_64::__m128i,
    d: std::arch::x86_64::__m128i,
) -> u32 {
    use std::arch::x86_64::*;
    // Saturating packs keep -1 as -1 and 0 as 0, lanes in order.
    _mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d))) as u32
}

#[cfg(not(target_arch = "x86_64"))]
fn fold_mask(equal: impl Iterator<Item = bool>) -> u32 {
    equal.enumerate().fold(0, |mask, (i, eq)| mask | (u32::from(eq) << i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: Unit>(top: u32) {
        let a: [T; LANES] = std::array::from_fn(|i| T::store((i % 3) as u32));
        let b: [T; LANES] = std::array::from_fn(|i| T::store(if i == 5 || i == 15 { 7 } else { (i % 3) as u32 }));
        assert_eq!(T::equal_to(&a, T::store(0)), 0b1001_0010_0100_1001);
        assert_eq!(T::equal_to(&a, T::store(top)), 0);
        assert_eq!(T::equal_pairs(&a, &b), 0xFFFF & !(1 << 5) & !(1 << 15));
        let high = [T::store(top); LANES];
        assert_eq!(T::equal_to(&high, T::store(top)), 0xFFFF);
    }

    #[test]
    fn masks_mark_equal_lanes_in_order() {
        check::<u8>(u32::from(u8::MAX));
        check::<u16>(u32::from(u16::MAX));
        check::<u32>(u32::MAX);
    }

    #[test]
    fn marks_find_every_target_in_order() {
        // Newlines in and across blocks, at both ends of a word and in the remainder.
        let text: Vec<u8> = (0..150).map(|i| if i % 7 == 0 || i == 63 || i == 64 || i == 149 { b'\n' } else { b'a' }).collect();
        let units: Vec<u32> = text.iter().map(|&b| u32::from(b)).collect();
        for from in 0..=text.len() {
            let expected = text[from..].iter().position(|&b| b == b'\n').map(|i| from + i);
            assert_eq!(Marks::<3>::of(&text, b'\n').next(from), expected);
            assert_eq!(Marks::<3>::of(&units, b'\n').next(from), expected);
            assert_eq!(Marks::<3>::of(&units[..from], b'\n').next(from), None);
        }
    }

    #[test]
    fn narrow_units_hold_what_fits() {
        assert!(u8::holds(b"ascii") && u8::holds(&[0xFFu32]) && !u8::holds(&[0x100u32]));
        assert!(u16::holds(&[0u32, 0x41, 0xFFFF]));
        assert!(!u16::holds(&[0x41u32, 0x1_0000]));
        assert!(u16::holds(b"bytes"));
    }
}
