//! Compares 16 units at once: the detector's inner loops are these two masks. On x86-64 they
//! use SSE2, which every x86-64 CPU has; elsewhere a plain loop the compiler may vectorise.

/// Units compared at once.
pub const LANES: usize = 16;

/// Bit `i` set where `units[i] == target`.
#[inline]
pub fn equal_to(units: &[u32; LANES], target: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86-64 baseline; the unaligned loads stay inside `units`.
    unsafe {
        use std::arch::x86_64::*;
        let target = _mm_set1_epi32(target as i32);
        let p = units.as_ptr().cast::<__m128i>();
        let eq = |i| _mm_cmpeq_epi32(_mm_loadu_si128(p.add(i)), target);
        movemask(eq(0), eq(1), eq(2), eq(3))
    }
    #[cfg(not(target_arch = "x86_64"))]
    units.iter().enumerate().fold(0, |mask, (i, &u)| mask | (u32::from(u == target) << i))
}

/// Bit `i` set where `a[i] == b[i]`.
#[inline]
pub fn equal_pairs(a: &[u32; LANES], b: &[u32; LANES]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `equal_to`.
    unsafe {
        use std::arch::x86_64::*;
        let (pa, pb) = (a.as_ptr().cast::<__m128i>(), b.as_ptr().cast::<__m128i>());
        let eq = |i| _mm_cmpeq_epi32(_mm_loadu_si128(pa.add(i)), _mm_loadu_si128(pb.add(i)));
        movemask(eq(0), eq(1), eq(2), eq(3))
    }
    #[cfg(not(target_arch = "x86_64"))]
    a.iter().zip(b).enumerate().fold(0, |mask, (i, (x, y))| mask | (u32::from(x == y) << i))
}

/// Packs four 4-lane compare results (all ones or zeros per lane) into a 16-bit mask.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn movemask(
    a: std::arch::x86_64::__m128i,
    b: std::arch::x86_64::__m128i,
    c: std::arch::x86_64::__m128i,
    d: std::arch::x86_64::__m128i,
) -> u32 {
    use std::arch::x86_64::*;
    // Saturating packs keep -1 as -1 and 0 as 0, lanes in order.
    _mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d))) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_mark_equal_lanes_in_order() {
        let a: [u32; LANES] = std::array::from_fn(|i| (i % 3) as u32);
        let b: [u32; LANES] = std::array::from_fn(|i| if i == 5 || i == 15 { 7 } else { (i % 3) as u32 });
        assert_eq!(equal_to(&a, 0), 0b1001_0010_0100_1001);
        assert_eq!(equal_to(&a, u32::MAX), 0);
        assert_eq!(equal_pairs(&a, &b), 0xFFFF & !(1 << 5) & !(1 << 15));
        let high = [u32::MAX; LANES];
        assert_eq!(equal_to(&high, u32::MAX), 0xFFFF);
    }
}
