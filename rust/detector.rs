//! The public streaming detector. Text is decoded (ASCII passes through as bytes) and handed to
//! the stream's state (`state`) a piece at a time. A stream's units are stored as narrow as they
//! fit (see `lanes`): the state starts with bytes, is widened on the first unit that does not
//! fit, and narrowed again once no such unit has arrived for a while.

use crate::extent;
use crate::finding::Finding;
use crate::lanes::Unit;
use crate::rules::Rules;
use crate::state::Core;
use crate::window::PIECE;

/// A streaming detector over a sequence of units (code points or token ids).
#[derive(Clone, Debug)]
pub struct Detector {
    core: Storage,
    /// Units fed up to and including the latest unit above `u8::MAX`, and above `u16::MAX` (0:
    /// none yet): the window stores units as wide as the widest of the last [`HOLD_WINDOWS`]
    /// windows' worth of units.
    beyond: [u64; 2],
    /// The storage fits every stream end below this (`beyond` unchanged): until a wide unit
    /// arrives or the latest one falls [`HOLD_WINDOWS`] windows behind, nothing is recast.
    fitted_until: u64,
}

/// How many windows' worth of units of a narrower width it takes before a widened stream is
/// narrowed again: one would do (the window no longer holds a wide unit), four keep a stream that
/// mixes widths from converting its window back and forth (each conversion copies it).
const HOLD_WINDOWS: u64 = 4;

/// A stream's units are stored as narrow as they fit (see `lanes`), widened on the first that
/// does not.
#[derive(Clone, Debug)]
enum Storage {
    Bytes(Core<u8>),
    Narrow(Core<u16>),
    Wide(Core<u32>),
}

/// Calls `$body` with `$core` bound to the detector's core, whatever it stores.
macro_rules! with_core {
    ($detector:expr, $core:ident => $body:expr) => {
        match $detector {
            Storage::Bytes($core) => $body,
            Storage::Narrow($core) => $body,
            Storage::Wide($core) => $body,
        }
    };
}

impl Detector {
    /// A detector with the given rules.
    pub fn new(rules: Rules) -> Detector {
        Detector { core: Storage::Bytes(Core::new(rules)), beyond: [0; 2], fitted_until: 0 }
    }

    pub fn rules(&self) -> &Rules {
        with_core!(&self.core, core => core.rules())
    }

    pub fn units_seen(&self) -> u64 {
        with_core!(&self.core, core => core.units_seen())
    }

    /// The first finding since creation or the last reset.
    pub fn finding(&self) -> Option<&Finding> {
        with_core!(&self.core, core => core.finding())
    }

    /// Units of history the detector keeps: an identical line longer than this is reported by
    /// the part of it the window holds at the newline.
    pub fn window_len(&self) -> usize {
        with_core!(&self.core, core => core.window_len())
    }

    /// Heap bytes held for this stream (none until the first unit).
    pub fn heap_bytes(&self) -> usize {
        with_core!(&self.core, core => core.heap_bytes())
    }

    /// Forgets everything, as if new. A stream stored as bytes keeps its window's memory for
    /// the next one: scanning many short texts with one detector does not allocate and zero a
    /// whole window for each.
    pub fn reset(&mut self) {
        match &mut self.core {
            Storage::Bytes(core) => core.reset(),
            Storage::Narrow(_) | Storage::Wide(_) => self.core = Storage::Bytes(Core::new(*self.rules())),
        }
        self.beyond = [0; 2];
        self.fitted_until = 0;
    }

    /// Feeds text; pushes the findings whose rule first held inside it onto `out`. ASCII (most
    /// text) goes to the window as it is; other text is decoded a piece at a time.
    pub fn feed_str(&mut self, text: &str, out: &mut Vec<Finding>) {
        let mut rest = text;
        while !rest.is_empty() {
            let head = &rest.as_bytes()[..rest.len().min(PIECE)];
            let ascii = if head.is_ascii() { head.len() } else { head.iter().position(|b| !b.is_ascii()).unwrap_or(0) };
            if ascii > 0 {
                self.feed_piece(&head[..ascii], out);
                rest = &rest[ascii..];
            } else {
                rest = self.feed_decoded(rest, out);
            }
        }
    }

    /// Decodes and feeds up to a piece of `text`'s chars; returns the rest. Runs of ASCII are
    /// widened a slice at a time (most text beyond ASCII is mostly ASCII); a char beyond it is
    /// decoded alone.
    fn feed_decoded<'a>(&mut self, text: &'a str, out: &mut Vec<Finding>) -> &'a str {
        let mut units = [0u32; PIECE];
        let (mut n, mut at) = (0, 0);
        let bytes = text.as_bytes();
        while n < PIECE && at < bytes.len() {
            let room = (PIECE - n).min(bytes.len() - at);
            let ascii = bytes[at..at + room].iter().position(|b| !b.is_ascii()).unwrap_or(room);
            for (unit, &byte) in units[n..n + ascii].iter_mut().zip(&bytes[at..at + ascii]) {
                *unit = u32::from(byte);
            }
            (n, at) = (n + ascii, at + ascii);
            if n < PIECE {
                if let Some(ch) = text[at..].chars().next() {
                    units[n] = u32::from(ch);
                    (n, at) = (n + 1, at + ch.len_utf8());
                }
            }
        }
        self.feed_piece(&units[..n], out);
        &text[at..]
    }

    /// Feeds units (code points, or token ids); pushes new findings onto `out`.
    pub fn feed_units(&mut self, units: &[u32], out: &mut Vec<Finding>) {
        self.feed_stored(units, out);
    }

    /// Feeds code points stored in one, two or four bytes each (as a Python `str` holds them).
    pub(crate) fn feed_stored<S: Unit>(&mut self, units: &[S], out: &mut Vec<Finding>) {
        for piece in units.chunks(PIECE) {
            self.feed_piece(piece, out);
        }
    }

    /// Processes one unit.
    pub fn push(&mut self, unit: u32, out: &mut Vec<Finding>) {
        self.feed_piece(&[unit], out);
    }

    /// A piece of units: bytes, or 16- or 32-bit code points and token ids.
    fn feed_piece<S: Unit>(&mut self, piece: &[S], out: &mut Vec<Finding>) {
        let first = self.units_seen();
        // One pass the compiler vectorises rules out wide units in most pieces.
        if !u8::holds(piece) {
            for (beyond, max) in self.beyond.iter_mut().zip([u32::from(u8::MAX), u32::from(u16::MAX)]) {
                if let Some(i) = piece.iter().rposition(|&unit| unit.into() > max) {
                    *beyond = first + i as u64 + 1;
                    self.fitted_until = 0;
                }
            }
        }
        // Most streams never hold a unit wider than a byte, and most pieces of those that do
        // change nothing: nothing to recast.
        let end = first + piece.len() as u64;
        if self.beyond != [0; 2] && end >= self.fitted_until {
            self.fit_storage(end);
        }
        with_core!(&mut self.core, core => core.feed_piece(piece, out));
    }

    /// Recasts the window to the narrowest storage that holds every unit it has and will have
    /// once the stream reaches `end`: units older than `HOLD_WINDOWS` windows are never held.
    fn fit_storage(&mut self, end: u64) {
        let hold = HOLD_WINDOWS * (self.window_len() + PIECE) as u64;
        let [above_u8, above_u16] = self.beyond.map(|beyond| beyond > 0 && beyond + hold > end);
        let recast = match &self.core {
            Storage::Bytes(core) if above_u16 => Some(Storage::Wide(core.recast())),
            Storage::Bytes(core) if above_u8 => Some(Storage::Narrow(core.recast())),
            Storage::Narrow(core) if above_u16 => Some(Storage::Wide(core.recast())),
            Storage::Narrow(core) if !above_u8 => Some(Storage::Bytes(core.recast())),
            Storage::Wide(core) if !above_u16 => {
                Some(if above_u8 { Storage::Narrow(core.recast()) } else { Storage::Bytes(core.recast()) })
            }
            _ => None,
        };
        if let Some(core) = recast {
            self.core = core;
        }
        // What fits now fits until a wide unit falls `hold` behind the end.
        self.fitted_until = self
            .beyond
            .into_iter()
            .filter(|&beyond| beyond > 0 && beyond + hold > end)
            .map(|b| b + hold)
            .min()
            .unwrap_or(u64::MAX);
    }
}

/// Every finding in `units`, each with its whole extent (see [`Finding`]).
pub fn scan_units(units: &[u32], rules: &Rules) -> Vec<Finding> {
    scan_stored(units, rules)
}

/// [`scan_units`] over code points stored in one, two or four bytes each.
pub(crate) fn scan_stored<S: Unit>(units: &[S], rules: &Rules) -> Vec<Finding> {
    let mut detector = Detector::new(*rules);
    let mut out = Vec::new();
    detector.feed_stored(units, &mut out);
    extent::complete(units, rules, &mut out);
    out
}

/// Every finding in `text` (offsets in code points), each with its whole extent.
pub fn scan_str(text: &str, rules: &Rules) -> Vec<Finding> {
    let mut detector = Detector::new(*rules);
    let mut out = Vec::new();
    detector.feed_str(text, &mut out);
    extent::complete_str(text, rules, &mut out);
    out
}
