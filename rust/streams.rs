//! Many streams stepped together: one call per decode step for a whole batch, as a serving
//! engine sees it. Slots are numbered; a freed slot number is reused by the next stream added.

use crate::detector::Detector;
use crate::finding::Finding;
use crate::rules::Rules;

#[derive(Clone, Debug)]
pub struct StreamSet {
    rules: Rules,
    slots: Vec<Option<Stream>>,
    free: Vec<usize>,
}

#[derive(Clone, Debug)]
struct Stream {
    detector: Detector,
    /// New findings go here, so a step can report them without allocating per stream.
    found: Vec<Finding>,
}

/// A slot number that holds no stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoSuchStream(pub usize);

impl StreamSet {
    pub fn new(rules: Rules) -> StreamSet {
        StreamSet { rules, slots: Vec::new(), free: Vec::new() }
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Starts a stream; returns its slot.
    pub fn add(&mut self) -> usize {
        let stream = Stream { detector: Detector::new(self.rules), found: Vec::new() };
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(stream);
                slot
            }
            None => {
                self.slots.push(Some(stream));
                self.slots.len() - 1
            }
        }
    }

    /// Ends the stream in `slot`, freeing the slot.
    pub fn remove(&mut self, slot: usize) -> Result<(), NoSuchStream> {
        self.stream_mut(slot)?;
        self.slots[slot] = None;
        self.free.push(slot);
        Ok(())
    }

    /// Streams in the set.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn detector(&self, slot: usize) -> Result<&Detector, NoSuchStream> {
        match self.slots.get(slot) {
            Some(Some(stream)) => Ok(&stream.detector),
            _ => Err(NoSuchStream(slot)),
        }
    }

    fn stream_mut(&mut self, slot: usize) -> Result<&mut Stream, NoSuchStream> {
        match self.slots.get_mut(slot) {
            Some(Some(stream)) => Ok(stream),
            _ => Err(NoSuchStream(slot)),
        }
    }

    /// Checks every slot before anything is fed, so a bad slot changes nothing.
    pub fn check_slots(&self, slots: &[usize]) -> Result<(), NoSuchStream> {
        slots.iter().try_for_each(|&slot| self.detector(slot).map(|_| ()))
    }

    /// Feeds `units[i]` to the stream in `slots[i]`, for every i; calls `fired` with each slot
    /// and the findings its unit completed. `slots` must have passed [`Self::check_slots`].
    pub fn step(&mut self, slots: &[usize], units: &[u32], mut fired: impl FnMut(usize, &[Finding])) {
        debug_assert_eq!(slots.len(), units.len());
        for (&slot, &unit) in slots.iter().zip(units) {
            let Some(stream) = self.slots[slot].as_mut() else { continue };
            stream.detector.push(unit, &mut stream.found);
            if !stream.found.is_empty() {
                fired(slot, &stream.found);
                stream.found.clear();
            }
        }
    }

    /// Feeds text `deltas[i]` to the stream in `slots[i]`, like [`Self::step`].
    pub fn step_text(&mut self, slots: &[usize], deltas: &[&str], mut fired: impl FnMut(usize, &[Finding])) {
        debug_assert_eq!(slots.len(), deltas.len());
        for (&slot, delta) in slots.iter().zip(deltas) {
            let Some(stream) = self.slots[slot].as_mut() else { continue };
            stream.detector.feed_str(delta, &mut stream.found);
            if !stream.found.is_empty() {
                fired(slot, &stream.found);
                stream.found.clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_RULES;

    #[test]
    fn each_stream_finds_what_its_own_detector_finds() {
        let texts: Vec<Vec<u32>> = ["loadTools. ".repeat(40), "clean text, nothing repeats".into(), "ab".repeat(300)]
            .iter()
            .map(|t| t.chars().map(u32::from).collect())
            .collect();
        let mut set = StreamSet::new(DEFAULT_RULES);
        let slots: Vec<usize> = texts.iter().map(|_| set.add()).collect();
        let mut found = vec![Vec::new(); texts.len()];
        let longest = texts.iter().map(Vec::len).max().unwrap();
        for i in 0..longest {
            let (step_slots, units): (Vec<usize>, Vec<u32>) =
                slots.iter().zip(&texts).filter(|(_, t)| i < t.len()).map(|(&s, t)| (s, t[i])).unzip();
            set.step(&step_slots, &units, |slot, new| found[slot].extend_from_slice(new));
        }
        for (slot, text) in slots.iter().zip(&texts) {
            assert_eq!(found[*slot], crate::oracle::first_held(text, &DEFAULT_RULES));
        }
    }

    #[test]
    fn slots_are_reused_and_checked() {
        let mut set = StreamSet::new(DEFAULT_RULES);
        let (a, b) = (set.add(), set.add());
        set.remove(a).unwrap();
        assert_eq!(set.remove(a), Err(NoSuchStream(a)));
        assert_eq!(set.check_slots(&[b, a]), Err(NoSuchStream(a)));
        assert_eq!(set.add(), a);
        assert_eq!(set.len(), 2);
    }
}
