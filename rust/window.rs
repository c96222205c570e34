//! The last units of a stream, in a ring: what the rules look back at.

/// What the ring holds before units fill it: no code point, and `+ 1` of it is 0.
pub const FILLER: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct Window {
    /// Allocated on the first unit, so an idle detector holds nothing.
    buf: Vec<u32>,
    len: usize,
    /// Where the next unit goes.
    head: usize,
}

impl Window {
    pub fn new(len: usize) -> Window {
        Window { buf: Vec::new(), len, head: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Allocates the ring, filled with `FILLER`.
    pub fn allocate(&mut self) {
        if self.buf.is_empty() {
            self.buf = vec![FILLER; self.len];
        }
    }

    /// Pushes a unit; the ring must be allocated.
    #[inline]
    pub fn push(&mut self, unit: u32) {
        self.buf[self.head] = unit;
        self.head += 1;
        if self.head == self.len {
            self.head = 0;
        }
    }

    /// The unit `back` places before the newest (`back == 0` is the newest).
    #[inline]
    pub fn back(&self, back: u64) -> u32 {
        debug_assert!((back as usize) < self.len);
        let back = back as usize + 1;
        let idx = if self.head >= back { self.head - back } else { self.head + self.len - back };
        self.buf[idx]
    }
}
