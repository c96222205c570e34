//! The last units of a stream in a ring, addressed by their position in the stream.
//!
//! Units are appended a piece at a time, ahead of the detector working through them, so the
//! ring holds the rules' window plus one piece. Its first [`WIDE`] slots are copied past its
//! end and its last [`WIDE`] before its start, so up to 32 units from any position, or from up
//! to 32 positions before a slot, can be read as one array (and compared as a vector) without
//! working out where the ring wraps.

use crate::lanes::{Unit, LANES, WIDE};

const MIRROR: usize = WIDE;

#[cfg(test)]
thread_local! {
    /// Units compared by [`Window::run_start`] on this thread: tests bound the work of tracing.
    pub static TRACED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}
/// The most units appended at once: the detector works through them before the next piece.
pub const PIECE: usize = 512;

/// A slot of a window's ring, below its `cap`: made only by [`Window::slot`], which checks that
/// the position is held (so the window is allocated, as it is once a unit is appended, for good),
/// and kept below `cap` by [`Window::slot_after`]. Used with the window that made it, within one
/// call; the detector's vector reads rely on it. Slot `s` is `buf[MIRROR + s]`.
#[derive(Clone, Copy, Debug)]
pub struct Slot(usize);

#[derive(Clone, Debug)]
pub struct Window<T: Unit> {
    /// The copy of the ring's last slots, the ring, then the copy of its first; allocated on the first unit, so an idle detector holds nothing.
    buf: Vec<T>,
    /// Units of history the rules need behind the unit being worked on.
    len: usize,
    /// Ring slots: `len` plus one piece.
    cap: usize,
    /// The slot of the next unit.
    head: usize,
    /// Units appended so far: the position of the next unit.
    end: u64,
}

impl<T: Unit> Window<T> {
    pub fn new(len: usize) -> Window<T> {
        Window { buf: Vec::new(), len, cap: len + PIECE, head: 0, end: 0 }
    }

    /// Units of history the rules need (the ring holds more).
    pub fn len(&self) -> usize {
        self.len
    }

    /// The position of the next unit.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The first position still held once `n` more units are appended.
    pub fn oldest_after(&self, n: usize) -> u64 {
        (self.end + n as u64).saturating_sub(self.cap as u64)
    }

    pub fn allocate(&mut self) {
        if self.buf.is_empty() {
            self.buf = vec![T::default(); MIRROR + self.cap + MIRROR];
        }
    }

    /// Empties the window as if new but keeps its allocation, zeroed again: only the slots
    /// written so far (a short stream touches a few of them; zeroing all would cost more than
    /// scanning it).
    pub fn clear(&mut self) {
        let written = self.end.min(self.cap as u64) as usize;
        if written == self.cap {
            self.buf.fill(T::default());
        } else if !self.buf.is_empty() {
            // The ring's first slots and the copies made of them past its end and before its
            // start (`append`); a ring that never wrapped has written nothing else.
            self.buf[..MIRROR + written].fill(T::default());
            self.buf[MIRROR + self.cap..].fill(T::default());
        }
        self.head = 0;
        self.end = 0;
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity() * std::mem::size_of::<T>()
    }

    /// Appends at most [`PIECE`] units; the ring must be allocated.
    pub fn append<S: Copy + Into<u32>>(&mut self, units: &[S]) {
        debug_assert!(units.len() <= PIECE && T::holds(units));
        let first = units.len().min(self.cap - self.head);
        let store = |to: &mut [T], from: &[S]| to.iter_mut().zip(from).for_each(|(t, &u)| *t = T::store(u.into()));
        let ring = &mut self.buf[MIRROR..MIRROR + self.cap];
        store(&mut ring[self.head..self.head + first], &units[..first]);
        store(&mut ring[..units.len() - first], &units[first..]);
        if self.head < MIRROR || first < units.len() {
            self.buf.copy_within(MIRROR..2 * MIRROR, MIRROR + self.cap);
        }
        if self.head + first > self.cap - MIRROR {
            self.buf.copy_within(self.cap..MIRROR + self.cap, 0);
        }
        self.head += units.len();
        if self.head >= self.cap {
            self.head -= self.cap;
        }
        self.end += units.len() as u64;
    }

    /// The unit at `pos`.
    #[inline]
    pub fn at(&self, pos: u64) -> u32 {
        self.lanes_back::<1>(self.slot(pos), 0)[0].into()
    }

    /// The 16 units from `pos` on, as far as they are appended (the lanes past the newest unit
    /// hold stale values, for the caller to mask).
    #[inline]
    pub fn lanes(&self, pos: u64) -> &[T; LANES] {
        self.lanes_back(self.slot(pos), 0)
    }

    /// The `N <= 32` units from the position `back <= 32` before the one at `slot`, without
    /// working out the slot again.
    #[inline]
    pub fn lanes_back<const N: usize>(&self, slot: Slot, back: usize) -> &[T; N] {
        const { assert!(N <= MIRROR) };
        assert!(back <= MIRROR);
        // SAFETY: a `Slot` is below `cap` and comes from an allocated window (see `Slot`), so
        // `MIRROR + slot - back` is at least 0 and the lanes end by `MIRROR + cap + MIRROR`, the
        // buffer's length.
        unsafe { &*self.buf.as_ptr().add(MIRROR + slot.0 - back).cast::<[T; N]>() }
    }

    /// The slot `n <= 32` places after `slot`.
    #[inline]
    pub fn slot_after(&self, slot: Slot, n: usize) -> Slot {
        assert!(n <= MIRROR);
        let slot = slot.0 + n;
        Slot(if slot >= self.cap { slot - self.cap } else { slot })
    }

    /// The slot of a held position, for [`Window::lanes_back`].
    #[inline]
    pub fn slot(&self, pos: u64) -> Slot {
        // One compare checks both ends: `back` is in `1..=cap` exactly when `pos` is held.
        let back = self.end.wrapping_sub(pos);
        assert!(back.wrapping_sub(1) < self.cap as u64, "{pos} not held");
        let slot = self.head.wrapping_sub(back as usize);
        Slot(if slot > self.head { slot.wrapping_add(self.cap) } else { slot })
    }

    /// The held units `from..to`, oldest first, as one or two slices of the ring.
    pub fn slices(&self, from: u64, to: u64) -> (&[T], &[T]) {
        if from == to {
            return (&[], &[]);
        }
        let (first, last) = (self.slot(from).0, self.slot(to - 1).0);
        let ring = &self.buf[MIRROR..MIRROR + self.cap];
        if first <= last {
            (&ring[first..=last], &[])
        } else {
            (&ring[first..], &ring[..=last])
        }
    }

    /// The units `from..to`, oldest first.
    pub fn units(&self, from: u64, to: u64) -> Vec<u32> {
        let (a, b) = self.slices(from, to);
        // One slice after the other: a chained iterator is copied a unit at a time.
        let mut units = Vec::with_capacity(a.len() + b.len());
        units.extend(a.iter().map(|&unit| -> u32 { unit.into() }));
        units.extend(b.iter().map(|&unit| -> u32 { unit.into() }));
        units
    }

    /// The first position in `from..to` whose unit differs from the one `period` before it, or
    /// `to`.
    pub fn first_break(&self, period: u64, from: u64, to: u64) -> u64 {
        let mut pos = from;
        while pos < to {
            let n = ((to - pos) as usize).min(LANES);
            let held = u32::MAX >> (32 - n);
            let differ = !T::equal_pairs(self.lanes(pos), self.lanes(pos - period)) & held;
            if differ != 0 {
                return pos + u64::from(differ.trailing_zeros());
            }
            pos += n as u64;
        }
        to
    }

    /// The first position `p` in `floor..=to` such that every unit in `p..to` repeats the unit
    /// `period` before it (going back from `to`, the position after the last break).
    pub fn run_start(&self, period: u64, floor: u64, to: u64) -> u64 {
        let mut pos = to;
        while pos > floor {
            let n = ((pos - floor) as usize).min(LANES);
            #[cfg(test)]
            TRACED.with(|traced| traced.set(traced.get() + n as u64));
            let from = pos - n as u64;
            // The lanes past `pos` are masked off; they are read but not judged.
            let held = u32::MAX >> (32 - n);
            let differ = !T::equal_pairs(self.lanes(from), self.lanes(from - period)) & held;
            if differ != 0 {
                return from + u64::from(32 - differ.leading_zeros());
            }
            pos = from;
        }
        floor
    }

    /// The same window storing its units as `U`, which must hold every unit held (and the
    /// slots not written yet, which hold 0).
    pub fn recast<U: Unit>(&self) -> Window<U> {
        debug_assert!(U::holds(&self.buf));
        Window {
            buf: self.buf.iter().map(|&unit| U::store(unit.into())).collect(),
            len: self.len,
            cap: self.cap,
            head: self.head,
            end: self.end,
        }
    }
}
