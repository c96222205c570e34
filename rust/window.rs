//! The last units of a stream, in a ring: what the rules look back at.

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

    #[inline]
    pub fn push(&mut self, unit: u32) {
        if self.buf.is_empty() {
            self.buf = vec![0; self.len];
        }
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
