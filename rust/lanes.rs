//! How the window stores units, and compares 16 of them at once: the detector's inner loops are
//! these masks. A stream's units are kept as narrow as they fit: `u8` while every unit is
//! below 256 (ASCII and Latin-1 text: 16 units per 128-bit compare), `u16` while they are in the
//! Basic Multilingual Plane, `u32` from the first that is not. On x86-64 the masks use SSE2,
//! which every x86-64 CPU has, and the sampling prefilter also has an AVX2 form over [`WIDE`]
//! lanes for CPUs that have it (checked at run time); elsewhere a plain loop the compiler may
//! vectorise.

use std::fmt::Debug;
use std::mem::MaybeUninit;

/// Units compared at once.
pub const LANES: usize = 16;

/// Lanes of the sampling prefilter with AVX2: 32 periods per group halve the groups of a sample.
pub const WIDE: usize = 32;

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
    /// Bit `i` set where `units[k][i] == targets[k]` for each `k` of three: the sampling
    /// prefilter (three masks ANDed: joining the compares by hand ran the same instructions).
    #[inline]
    fn agree(units: [&[Self; LANES]; 3], targets: [Self; 3]) -> u32 {
        (0..3).fold(u32::MAX, |mask, k| mask & Self::equal_to(units[k], targets[k]))
    }
    /// [`Unit::agree`] over [`WIDE`] lanes.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    unsafe fn agree_wide(units: [&[Self; WIDE]; 3], targets: [Self; 3]) -> u32;

    /// A bit for each lane that holds an ASCII digit (the lanes past the ones a caller holds are
    /// for it to mask).
    #[inline]
    fn digits(units: &[Self; LANES]) -> u32 {
        fold_mask(units.iter().map(|&u| Into::<u32>::into(u).wrapping_sub(0x30) < 10))
    }

    /// The sum of the units among the first `n` lanes that are no ASCII digit, plus their count
    /// times 2^32.
    #[inline]
    fn non_digit_digest(units: &[Self; LANES], n: usize) -> u64 {
        units[..n].iter().fold(0, |digest, &unit| {
            let u: u32 = unit.into();
            if u.wrapping_sub(0x30) < 10 {
                digest
            } else {
                digest + u64::from(u) + (1 << 32)
            }
        })
    }
}

/// 16 bytes of ones then 16 of zeros: 16 bytes from `16 - n` mask the first `n` lanes.
#[cfg(target_arch = "x86_64")]
static FIRST_LANES: [u8; 32] = {
    let mut mask = [0; 32];
    let mut i = 0;
    while i < 16 {
        mask[i] = 0xff;
        i += 1;
    }
    mask
};

impl Unit for u8 {
    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn digits(units: &[u8; LANES]) -> u32 {
        // SAFETY: SSE2 is part of the x86-64 baseline; the load stays inside `units`.
        unsafe {
            use std::arch::x86_64::*;
            let d = _mm_sub_epi8(_mm_loadu_si128(units.as_ptr().cast()), _mm_set1_epi8(0x30));
            _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d)) as u32
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn non_digit_digest(units: &[u8; LANES], n: usize) -> u64 {
        // SAFETY: SSE2 is part of the x86-64 baseline; the loads stay inside `units` and
        // `FIRST_LANES` (`n <= 16`).
        unsafe {
            use std::arch::x86_64::*;
            let v = _mm_loadu_si128(units.as_ptr().cast());
            let d = _mm_sub_epi8(v, _mm_set1_epi8(0x30));
            let digit = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d);
            let held = _mm_loadu_si128(FIRST_LANES.as_ptr().add(16 - n).cast());
            let keep = _mm_andnot_si128(digit, held);
            let sums = _mm_sad_epu8(_mm_and_si128(v, keep), _mm_setzero_si128());
            let counts = _mm_sad_epu8(_mm_and_si128(keep, _mm_set1_epi8(1)), _mm_setzero_si128());
            let both = _mm_add_epi64(sums, _mm_slli_epi64::<32>(counts));
            (_mm_cvtsi128_si64(both) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(both, both))) as u64
        }
    }

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

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn agree_wide(units: [&[u8; WIDE]; 3], targets: [u8; 3]) -> u32 {
        use std::arch::x86_64::*;
        let eq = |k: usize| {
            _mm256_cmpeq_epi8(_mm256_loadu_si256(units[k].as_ptr().cast()), _mm256_set1_epi8(targets[k] as i8))
        };
        _mm256_movemask_epi8(_mm256_and_si256(_mm256_and_si256(eq(0), eq(1)), eq(2))) as u32
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

    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn digits(units: &[u16; LANES]) -> u32 {
        // SAFETY: as in `equal_to`.
        unsafe {
            use std::arch::x86_64::*;
            let p = units.as_ptr().cast::<__m128i>();
            // `u - '0'` below 10 unsigned: with the sign bits flipped, a signed compare.
            let digit = |i| {
                let d = _mm_sub_epi16(_mm_loadu_si128(p.add(i)), _mm_set1_epi16(0x30));
                _mm_cmplt_epi16(_mm_xor_si128(d, _mm_set1_epi16(i16::MIN)), _mm_set1_epi16(i16::MIN + 10))
            };
            _mm_movemask_epi8(_mm_packs_epi16(digit(0), digit(1))) as u32
        }
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

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn agree_wide(units: [&[u16; WIDE]; 3], targets: [u16; 3]) -> u32 {
        use std::arch::x86_64::*;
        let half = |h: usize| {
            let eq = |k: usize| {
                _mm256_cmpeq_epi16(
                    _mm256_loadu_si256(units[k].as_ptr().cast::<__m256i>().add(h)),
                    _mm256_set1_epi16(targets[k] as i16),
                )
            };
            _mm256_and_si256(_mm256_and_si256(eq(0), eq(1)), eq(2))
        };
        // The pack works within 128-bit halves (lanes 0-7, 16-23, 8-15, 24-31): put them in order.
        let packed = _mm256_packs_epi16(half(0), half(1));
        _mm256_movemask_epi8(_mm256_permute4x64_epi64::<0b11_01_10_00>(packed)) as u32
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

    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn digits(units: &[u32; LANES]) -> u32 {
        // SAFETY: as for `u16`.
        unsafe {
            use std::arch::x86_64::*;
            let p = units.as_ptr().cast::<__m128i>();
            // As for `u16`, on 32-bit lanes.
            let digit = |i| {
                let d = _mm_sub_epi32(_mm_loadu_si128(p.add(i)), _mm_set1_epi32(0x30));
                _mm_cmplt_epi32(_mm_xor_si128(d, _mm_set1_epi32(i32::MIN)), _mm_set1_epi32(i32::MIN + 10))
            };
            pack_quarters(digit(0), digit(1), digit(2), digit(3))
        }
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

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn agree_wide(units: [&[u32; WIDE]; 3], targets: [u32; 3]) -> u32 {
        use std::arch::x86_64::*;
        let quarter = |q: usize| {
            let eq = |k: usize| {
                _mm256_cmpeq_epi32(
                    _mm256_loadu_si256(units[k].as_ptr().cast::<__m256i>().add(q)),
                    _mm256_set1_epi32(targets[k] as i32),
                )
            };
            _mm256_and_si256(_mm256_and_si256(eq(0), eq(1)), eq(2))
        };
        // The packs work within 128-bit halves and leave the quarters' 4-lane runs in the order
        // 0 8 16 24 4 12 20 28: the permute puts them back in order.
        let packed =
            _mm256_packs_epi16(_mm256_packs_epi32(quarter(0), quarter(1)), _mm256_packs_epi32(quarter(2), quarter(3)));
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        _mm256_movemask_epi8(_mm256_permutevar8x32_epi32(packed, order)) as u32
    }
}

/// The indices of `target` (which fits every unit type) in a piece of at most `64 * N` units, in
/// order. Found with vector compares into one bitmap word per 64 units, then listed four at a
/// time without a branch per mark: a branch on whether a word holds another mark mispredicts
/// about once per line of text.
#[derive(Clone, Copy, Debug)]
pub struct Marks<const N: usize> {
    /// `at[..len]` are the marks, written by [`Marks::list`]; the entries past them are scratch,
    /// never read, and left uninitialised (zeroing 1 KiB per piece cost 4% of the detector).
    at: [[MaybeUninit<u16>; 64]; N],
    len: usize,
    /// A whole word of 64 units holds no mark.
    bare_word: bool,
}

impl<const N: usize> Marks<N> {
    /// No marks, room for a piece's: filled in place by [`Marks::list`] (as a value it would
    /// be copied, 1 KiB for a piece).
    pub fn new() -> Marks<N> {
        Marks { at: [[MaybeUninit::uninit(); 64]; N], len: 0, bare_word: false }
    }

    /// Lists the indices of `target` in `units`, in place of those held.
    #[inline(always)]
    pub fn list<S: Unit>(&mut self, units: &[S], target: u8) {
        assert!(units.len() <= 64 * N && 64 * N <= usize::from(u16::MAX));
        let target = S::store(u32::from(target));
        self.len = 0;
        let mut bare_word = false;
        let listed = self.at.as_flattened_mut();
        for (word, units) in units.chunks(64).enumerate() {
            let mut bits = match <&[S; 64]>::try_from(units) {
                Ok(units) => {
                    let found =
                        |i: usize| u64::from(S::equal_to(units[i..i + LANES].try_into().expect("LANES"), target));
                    (0..64).step_by(LANES).fold(0, |word, i| word | found(i) << i)
                }
                Err(_) => units.iter().enumerate().fold(0, |word, (i, &unit)| word | u64::from(unit == target) << i),
            };
            if bits == 0 {
                bare_word |= units.len() == 64;
                continue;
            }
            let count = bits.count_ones() as usize;
            // Four entries per round whether they are marks or not (once the word's bits are
            // spent an entry reads one past the word): `len` moves past the marks only. The
            // `len` marks before this word are below `64 * word`, and a word's rounds write at
            // most 64 entries, so the writes stay inside `at`.
            let mut next = self.len;
            while bits != 0 {
                for slot in &mut listed[next..next + 4] {
                    slot.write((64 * word) as u16 + bits.trailing_zeros() as u16);
                    bits &= bits.wrapping_sub(1);
                }
                next += 4;
            }
            self.len += count;
        }
        self.bare_word = bare_word;
    }

    /// Whether a whole word of 64 units (from the start of the units listed) holds no mark: any
    /// run of 127 units or more without one holds such a word.
    pub fn has_a_bare_word(&self) -> bool {
        self.bare_word
    }

    /// The marks at or after index `from`, in order.
    pub fn from(&self, from: usize) -> &[u16] {
        let listed = &self.at.as_flattened()[..self.len];
        // SAFETY: `list` wrote every entry below `len`: each word's rounds write a run of entries
        // from the previous `len` on, at least as long as the marks the word adds to it.
        let marks = unsafe { &*(listed as *const [MaybeUninit<u16>] as *const [u16]) };
        &marks[marks.partition_point(|&i| usize::from(i) < from)..]
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

    /// The prefilter's mask, lane by lane, for both widths: every lane order the packs could
    /// scramble is told apart, as each probe misses in lanes of its own.
    fn check_agree<T: Unit>(top: u32) {
        let probe =
            |miss: fn(usize) -> bool| -> [T; WIDE] { std::array::from_fn(|i| T::store(if miss(i) { 1 } else { top })) };
        let (a, b, c) = (probe(|i| i % 5 == 0), probe(|i| i % 7 == 2), probe(|i| i == 30 || i == 9));
        let target = T::store(top);
        let expected =
            (0..WIDE).filter(|&i| !(i % 5 == 0 || i % 7 == 2 || i == 30 || i == 9)).fold(0u32, |m, i| m | 1 << i);
        let head = |units: &[T; WIDE]| -> [T; LANES] { units[..LANES].try_into().expect("LANES") };
        let (ha, hb, hc) = (head(&a), head(&b), head(&c));
        assert_eq!(T::agree([&ha, &hb, &hc], [target; 3]), expected & 0xFFFF);
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            assert_eq!(unsafe { T::agree_wide([&a, &b, &c], [target; 3]) }, expected);
        }
    }

    #[test]
    fn the_prefilter_marks_lanes_where_all_three_probes_agree() {
        check_agree::<u8>(u32::from(u8::MAX));
        check_agree::<u16>(u32::from(u16::MAX));
        check_agree::<u32>(u32::MAX);
    }

    #[test]
    fn marks_find_every_target_in_order() {
        // Newlines in and across blocks, at both ends of a word, in the remainder, and a word
        // of nothing else (more than eight to a word).
        let text: Vec<u8> = (0..200)
            .map(|i| if i % 7 == 0 || i == 63 || i == 64 || i == 149 || (128..192).contains(&i) { b'\n' } else { b'a' })
            .collect();
        let units: Vec<u32> = text.iter().map(|&b| u32::from(b)).collect();
        let marked = |units: &[u32]| {
            let mut marks = Marks::<4>::new();
            marks.list(units, b'\n');
            marks
        };
        let mut bytes = Marks::<4>::new();
        bytes.list(&text, b'\n');
        for from in 0..=text.len() {
            let expected: Vec<u16> = (from..text.len()).filter(|&i| text[i] == b'\n').map(|i| i as u16).collect();
            assert_eq!(bytes.from(from), expected);
            assert_eq!(marked(&units).from(from), expected);
            assert_eq!(marked(&units[..from]).from(from), [] as [u16; 0]);
        }
        assert_eq!(marked(&[u32::from(b'\n'); 256]).from(0).len(), 256);
        // Listing again replaces the marks.
        bytes.list(&text[..10], b'\n');
        assert_eq!(bytes.from(0), [0, 7]);
    }

    #[test]
    fn narrow_units_hold_what_fits() {
        assert!(u8::holds(b"ascii") && u8::holds(&[0xFFu32]) && !u8::holds(&[0x100u32]));
        assert!(u16::holds(&[0u32, 0x41, 0xFFFF]));
        assert!(!u16::holds(&[0x41u32, 0x1_0000]));
        assert!(u16::holds(b"bytes"));
    }

    /// The vector digest of bytes is the plain sum and count, for every prefix of the lanes.
    #[test]
    fn non_digit_digests_agree_across_unit_types() {
        let text: Vec<u8> = (0..=255u8).cycle().skip(40).step_by(7).take(LANES).collect();
        let mut lanes = [0u8; LANES];
        lanes.copy_from_slice(&text);
        let wide: [u32; LANES] = lanes.map(u32::from);
        for n in 0..=LANES {
            let plain = wide[..n]
                .iter()
                .filter(|&&u| !(0x30..=0x39).contains(&u))
                .fold(0u64, |digest, &u| digest + u64::from(u) + (1 << 32));
            assert_eq!(u8::non_digit_digest(&lanes, n), plain, "{n}");
            assert_eq!(u32::non_digit_digest(&wide, n), plain, "{n}");
        }
        let digits = *b"0123456789012345";
        assert_eq!(u8::non_digit_digest(&digits, LANES), 0);
        let mixed: [u32; LANES] = std::array::from_fn(|i| [0x2F, 0x30, 0x39, 0x3A, 0x1_0030, 0x35, 0xFF30, 0][i % 8]);
        let expected = fold_mask(mixed.iter().map(|&u| (0x30..=0x39).contains(&u)));
        assert_eq!(u32::digits(&mixed), expected);
        assert_eq!(
            u16::digits(&mixed.map(|u| u as u16)),
            fold_mask(mixed.iter().map(|&u| (0x30..=0x39).contains(&(u & 0xFFFF))))
        );
        assert_eq!(
            u8::digits(&mixed.map(|u| u as u8)),
            fold_mask(mixed.iter().map(|&u| (0x30..=0x39).contains(&(u & 0xFF))))
        );
    }
}
