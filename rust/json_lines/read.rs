//! JSON lines: the values a field path reaches in each line, read without building the document,
//! and their findings; lines are read and scanned in parallel.
//!
//! serde_json parses each line straight into what the path reaches: members and items off the
//! path are skipped, not built, and a text without escapes is borrowed from the line. The reader
//! leaves a line unread wherever it might not read it as Python's `json` module does, so that
//! the caller reads those lines with `json` itself: anything serde_json refuses (Python also
//! accepts `NaN`, exponents beyond a double, escapes of lone surrogates, deeper nesting) and a
//! member repeated in an object the path goes through (Python keeps the last one, in the place
//! of the first). What serde_json accepts, `json` reads the same way.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::batch::in_parallel;
use crate::detector::Detector;
use crate::finding::Finding;
use crate::rules::Rules;

/// One segment of a field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// `*`: every item of a list, every member of an object.
    Every,
    /// The member `name` of an object; in a list, the item at `index` (negative: from the end)
    /// when the name reads as an integer.
    Key { name: String, index: Option<i64> },
}

/// What kind of value the path reached, when it is not text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Boolean,
    Number,
    Object,
    List,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Text(Cow<'a, str>),
    Null,
    Other(Kind),
}

/// One place the path reached: where (`messages.3.content`, indexes made concrete, names escaped
/// as in a field path) and the value there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reached<'a> {
    pub path: String,
    pub value: Value<'a>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// Only whitespace (as Python's `bytes.strip` sees it).
    Blank,
    /// Left to Python's `json` (see the module's doc).
    Unread,
    /// Every place the path reached, in document order.
    Read(Vec<Reached<'a>>),
}

/// One line of a chunk, as `loopbreak scan` reports it: its bytes in the chunk (with its
/// newline) and what the path reached there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScannedLine<'a> {
    pub bytes: Range<usize>,
    pub scan: Scan<'a>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scan<'a> {
    Blank,
    /// Left to Python's `json` (see the module's doc).
    Unread,
    /// `rows` texts and nulls reached, and the values to report: texts with findings and values
    /// that are not text.
    Read {
        rows: usize,
        told: Vec<Told<'a>>,
    },
}

/// A value to report: its index among the values the path reached in the line, where it is,
/// the value, and its findings (a text's; none for other values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Told<'a> {
    pub slot: usize,
    pub reached: Reached<'a>,
    pub findings: Vec<Finding>,
}

/// Reads and scans every line of `data` (lines end with `\n`; the last may not), in parallel.
pub fn scan_lines<'a>(data: &'a [u8], path: &[Segment], rules: &Rules, threads: Option<usize>) -> Vec<ScannedLine<'a>> {
    let mut bounds = Vec::new();
    let mut start = 0;
    for newline in memchr::memchr_iter(b'\n', data) {
        bounds.push(start..newline + 1);
        start = newline + 1;
    }
    if start < data.len() {
        bounds.push(start..data.len());
    }
    let scan = |detector: &mut Detector, bytes: &Range<usize>| {
        let scan = scan_line(&data[bytes.clone()], path, detector);
        ScannedLine { bytes: bytes.clone(), scan }
    };
    in_parallel(&bounds, || Detector::new(*rules), scan, threads)
}

/// What `path` reaches in one line, each text scanned by `detector` (reset for each) where it
/// is parsed: no path is worked out, no text kept. The few lines with something to report are
/// read again for their paths and texts.
pub fn scan_line<'a>(line: &'a [u8], path: &[Segment], detector: &mut Detector) -> Scan<'a> {
    if is_blank(line) {
        return Scan::Blank;
    }
    let mut scanned = Vec::new();
    let detector = RefCell::new(detector);
    if parse(line, Walk { path, at: None, out: &mut scanned, leaf: Scanned(&detector) }).is_err() {
        return Scan::Unread;
    }
    let rows = scanned.iter().filter(|(_, value)| !matches!(value, ScannedValue::Other)).count();
    let tell = |value: &ScannedValue| match value {
        ScannedValue::Text(findings) => !findings.is_empty(),
        ScannedValue::Null => false,
        ScannedValue::Other => true,
    };
    if !scanned.iter().any(|(_, value)| tell(value)) {
        return Scan::Read { rows, told: Vec::new() };
    }
    let Line::Read(reached) = read_line(line, path) else { unreachable!("the line was read once") };
    let told = scanned
        .into_iter()
        .zip(reached)
        .enumerate()
        .filter(|(_, ((_, value), _))| tell(value))
        .map(|(slot, ((_, value), reached))| {
            let findings = if let ScannedValue::Text(findings) = value { findings } else { Vec::new() };
            Told { slot, reached, findings }
        })
        .collect();
    Scan::Read { rows, told }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| b" \t\n\r\x0b\x0c".contains(b))
}

/// A line of UTF-8 (nearly every line) is checked whole at once and read as `str`, so that
/// serde_json does not check each string it reads one by one (a third of that check's
/// instructions saved, 1% of the benchmark's scan); any other line is read as bytes, where
/// invalid UTF-8 off the path is no error.
fn parse<'a, L: Leaf<'a>>(line: &'a [u8], walk: Walk<'_, '_, 'a, L>) -> serde_json::Result<()> {
    match std::str::from_utf8(line) {
        Ok(line) => parse_with(serde_json::Deserializer::from_str(line), walk),
        Err(_) => parse_with(serde_json::Deserializer::from_slice(line), walk),
    }
}

fn parse_with<'a, R: serde_json::de::Read<'a>, L: Leaf<'a>>(
    mut parser: serde_json::Deserializer<R>,
    walk: Walk<'_, '_, 'a, L>,
) -> serde_json::Result<()> {
    walk.deserialize(&mut parser).and_then(|()| parser.end())
}

/// What `path` reaches in one line: where, and the values (texts kept, not scanned).
pub fn read_line<'a>(line: &'a [u8], path: &[Segment]) -> Line<'a> {
    if is_blank(line) {
        return Line::Blank;
    }
    let mut reached = Vec::new();
    match parse(line, Walk { path, at: Some(String::new()), out: &mut reached, leaf: Kept }) {
        Ok(()) => Line::Read(reached.into_iter().map(|(path, value)| Reached { path, value }).collect()),
        Err(_) => Line::Unread,
    }
}

/// The segment name of a member or item, as a field path writes it.
fn escaped(name: &str) -> String {
    let escaped = name.replace('\\', "\\\\").replace('.', "\\.");
    if escaped == "*" {
        "\\*".to_owned()
    } else {
        escaped
    }
}

fn joined(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_owned()
    } else {
        format!("{at}.{name}")
    }
}

/// The repeated member that makes a line Python's to read.
fn repeated<E: de::Error>(name: &str) -> E {
    E::custom(format_args!("member {name:?} repeated"))
}

/// What a walk does with a value the path reached.
trait Leaf<'a>: Copy {
    type Value;
    fn read<D: Deserializer<'a>>(self, deserializer: D) -> Result<Self::Value, D::Error>;
}

/// Walks one value with the segments left in `path`, pushing what they reach onto `out`, with
/// its concrete path if `at` is kept (else every path is left empty).
struct Walk<'p, 'o, 'a, L: Leaf<'a>> {
    path: &'p [Segment],
    at: Option<String>,
    out: &'o mut Vec<(String, L::Value)>,
    leaf: L,
}

impl<'p, 'a, L: Leaf<'a>> Walk<'p, '_, 'a, L> {
    fn child(&mut self, name: impl FnOnce() -> String) -> Walk<'p, '_, 'a, L> {
        let at = self.at.as_deref().map(|at| joined(at, &name()));
        Walk { path: &self.path[1..], at, out: self.out, leaf: self.leaf }
    }
}

impl<'a, L: Leaf<'a>> DeserializeSeed<'a> for Walk<'_, '_, 'a, L> {
    type Value = ();

    fn deserialize<D: Deserializer<'a>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.path.is_empty() {
            let value = self.leaf.read(deserializer)?;
            self.out.push((self.at.unwrap_or_default(), value));
            Ok(())
        } else {
            deserializer.deserialize_any(self)
        }
    }
}

impl<'a, L: Leaf<'a>> Visitor<'a> for Walk<'_, '_, 'a, L> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    // A scalar has nothing inside it for the path to reach.
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'a>>(mut self, mut items: A) -> Result<(), A::Error> {
        let path = self.path;
        match &path[0] {
            Segment::Every => {
                let mut i = 0usize;
                while items.next_element_seed(self.child(|| i.to_string()))?.is_some() {
                    i += 1;
                }
            }
            Segment::Key { index: Some(index), .. } if *index >= 0 => {
                let mut i = 0i64;
                loop {
                    let more = if i == *index {
                        items.next_element_seed(self.child(|| i.to_string()))?.is_some()
                    } else {
                        items.next_element::<IgnoredAny>()?.is_some()
                    };
                    if !more {
                        break;
                    }
                    i += 1;
                }
            }
            Segment::Key { index: Some(index), .. } => {
                // From the end: the items are kept as raw JSON until their number is known.
                let mut raw: Vec<&'a RawValue> = Vec::new();
                while let Some(item) = items.next_element()? {
                    raw.push(item);
                }
                let len = raw.len() as i64;
                if -len <= *index {
                    let at = (len + index) as usize;
                    let mut parser = serde_json::Deserializer::from_str(raw[at].get());
                    self.child(|| at.to_string()).deserialize(&mut parser).map_err(de::Error::custom)?;
                }
            }
            Segment::Key { index: None, .. } => while items.next_element::<IgnoredAny>()?.is_some() {},
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'a>>(mut self, mut members: A) -> Result<(), A::Error> {
        let path = self.path;
        match &path[0] {
            Segment::Every => {
                let mut seen: HashSet<Cow<'a, str>> = HashSet::new();
                while let Some(Name(name)) = members.next_key()? {
                    if !seen.insert(name.clone()) {
                        return Err(repeated(&name));
                    }
                    members.next_value_seed(self.child(|| escaped(&name)))?;
                }
            }
            Segment::Key { name: wanted, .. } => {
                let mut found = false;
                while let Some(Name(name)) = members.next_key()? {
                    if name != wanted.as_str() {
                        members.next_value::<IgnoredAny>()?;
                    } else if found {
                        return Err(repeated(&name));
                    } else {
                        found = true;
                        members.next_value_seed(self.child(|| escaped(wanted)))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A member name, borrowed from the line when it has no escapes.
struct Name<'a>(Cow<'a, str>);

impl<'a> de::Deserialize<'a> for Name<'a> {
    fn deserialize<D: Deserializer<'a>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(NameVisitor)
    }
}

struct NameVisitor;

impl<'a> Visitor<'a> for NameVisitor {
    type Value = Name<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_borrowed_str<E>(self, name: &'a str) -> Result<Name<'a>, E> {
        Ok(Name(Cow::Borrowed(name)))
    }
    fn visit_str<E>(self, name: &str) -> Result<Name<'a>, E> {
        Ok(Name(Cow::Owned(name.to_owned())))
    }
}

/// Keeps the value: text, null, or the kind of anything else (skipped over).
#[derive(Clone, Copy)]
struct Kept;

impl<'a> Leaf<'a> for Kept {
    type Value = Value<'a>;
    fn read<D: Deserializer<'a>>(self, deserializer: D) -> Result<Value<'a>, D::Error> {
        deserializer.deserialize_any(ValueOf)
    }
}

/// Scans a text as it is parsed (from the line, or from the parser's buffer of an unescaped
/// text); only its findings are kept.
#[derive(Clone, Copy)]
struct Scanned<'r, 'd>(&'r RefCell<&'d mut Detector>);

enum ScannedValue {
    Text(Vec<Finding>),
    Null,
    Other,
}

impl<'a> Leaf<'a> for Scanned<'_, '_> {
    type Value = ScannedValue;
    fn read<D: Deserializer<'a>>(self, deserializer: D) -> Result<ScannedValue, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'a> Visitor<'a> for Scanned<'_, '_> {
    type Value = ScannedValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E>(self, text: &str) -> Result<ScannedValue, E> {
        let mut detector = self.0.borrow_mut();
        detector.reset();
        let mut findings = Vec::new();
        detector.feed_str(text, &mut findings);
        // A stored text is whole: its findings report their whole extent, as `scan` does.
        let rules = *detector.rules();
        crate::extent::complete_str(text, &rules, &mut findings);
        Ok(ScannedValue::Text(findings))
    }
    fn visit_unit<E>(self) -> Result<ScannedValue, E> {
        Ok(ScannedValue::Null)
    }
    fn visit_bool<E>(self, _: bool) -> Result<ScannedValue, E> {
        Ok(ScannedValue::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<ScannedValue, E> {
        Ok(ScannedValue::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<ScannedValue, E> {
        Ok(ScannedValue::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<ScannedValue, E> {
        Ok(ScannedValue::Other)
    }
    fn visit_seq<A: SeqAccess<'a>>(self, mut items: A) -> Result<ScannedValue, A::Error> {
        while items.next_element::<IgnoredAny>()?.is_some() {}
        Ok(ScannedValue::Other)
    }
    fn visit_map<A: MapAccess<'a>>(self, mut members: A) -> Result<ScannedValue, A::Error> {
        while members.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(ScannedValue::Other)
    }
}

/// The value the path reached: text, null, or the kind of anything else (skipped over).
struct ValueOf;

impl<'a> Visitor<'a> for ValueOf {
    type Value = Value<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E>(self, text: &'a str) -> Result<Value<'a>, E> {
        Ok(Value::Text(Cow::Borrowed(text)))
    }
    fn visit_str<E>(self, text: &str) -> Result<Value<'a>, E> {
        Ok(Value::Text(Cow::Owned(text.to_owned())))
    }
    fn visit_unit<E>(self) -> Result<Value<'a>, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Value<'a>, E> {
        Ok(Value::Other(Kind::Boolean))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Value<'a>, E> {
        Ok(Value::Other(Kind::Number))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Value<'a>, E> {
        Ok(Value::Other(Kind::Number))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Value<'a>, E> {
        Ok(Value::Other(Kind::Number))
    }
    fn visit_seq<A: SeqAccess<'a>>(self, mut items: A) -> Result<Value<'a>, A::Error> {
        while items.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Other(Kind::List))
    }
    fn visit_map<A: MapAccess<'a>>(self, mut members: A) -> Result<Value<'a>, A::Error> {
        while members.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Value::Other(Kind::Object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{scan_str, DEFAULT_RULES};

    fn path(text: &str) -> Vec<Segment> {
        text.split('.')
            .map(|s| if s == "*" { Segment::Every } else { Segment::Key { name: s.into(), index: s.parse().ok() } })
            .collect()
    }

    fn reached(line: &str, field: &str) -> Line<'static> {
        let line: &'static str = Box::leak(line.to_owned().into_boxed_str());
        read_line(line.as_bytes(), &path(field))
    }

    fn texts(pairs: &[(&str, &'static str)]) -> Line<'static> {
        Line::Read(
            pairs.iter().map(|&(p, t)| Reached { path: p.into(), value: Value::Text(Cow::Borrowed(t)) }).collect(),
        )
    }

    #[test]
    fn paths_reach_members_items_and_every_one() {
        let line = r#"{"messages":[{"content":"a"},{"role":"x"},{"content":"b"}],"n":{"x":"1","y":"2"}}"#;
        assert_eq!(
            reached(line, "messages.*.content"),
            texts(&[("messages.0.content", "a"), ("messages.2.content", "b")])
        );
        assert_eq!(reached(line, "messages.-1.content"), texts(&[("messages.2.content", "b")]));
        assert_eq!(reached(line, "messages.-3.content"), texts(&[("messages.0.content", "a")]));
        assert_eq!(reached(line, "messages.-4.content"), Line::Read(vec![]));
        assert_eq!(reached(line, "messages.2.content"), texts(&[("messages.2.content", "b")]));
        assert_eq!(reached(line, "messages.9.content"), Line::Read(vec![]));
        assert_eq!(reached(line, "n.*"), texts(&[("n.x", "1"), ("n.y", "2")]));
        assert_eq!(reached(line, "messages.x"), Line::Read(vec![]));
    }

    #[test]
    fn values_other_than_text_are_told_by_kind() {
        let line = r#"{"a":[null,true,1,2.5,-3,{"x":1},[1],"t\n"]}"#;
        let Line::Read(found) = reached(line, "a.*") else { panic!("unread") };
        let values: Vec<Value<'_>> = found.into_iter().map(|r| r.value).collect();
        assert_eq!(
            values,
            [
                Value::Null,
                Value::Other(Kind::Boolean),
                Value::Other(Kind::Number),
                Value::Other(Kind::Number),
                Value::Other(Kind::Number),
                Value::Other(Kind::Object),
                Value::Other(Kind::List),
                Value::Text(Cow::Owned("t\n".into())),
            ]
        );
    }

    #[test]
    fn lines_python_may_read_otherwise_are_left_to_it() {
        let lines: [&[u8]; 8] = [
            b"not json {",
            br#"{"a": NaN}"#,
            br#"{"a": 1e400}"#,
            br#"{"a": "\ud800"}"#,
            br#"{"a": "x", "a": "y"}"#,
            b"{\"a\": \"\xff\"}",
            br#"{"a": "x"} {"a": "y"}"#,
            b"\xef\xbb\xbf{\"a\": \"x\"}",
        ];
        for line in lines {
            assert_eq!(read_line(line, &path("a")), Line::Unread, "{}", String::from_utf8_lossy(line));
        }
        // Python keeps the last "b", where the path reaches nothing.
        assert_eq!(read_line(br#"{"b": {"a": "x"}, "b": 2}"#, &path("b.a")), Line::Unread);
        // A repeated member off the path changes nothing the path reaches.
        assert_eq!(reached(r#"{"a":"x","b":1,"b":2}"#, "a"), texts(&[("a", "x")]));
        assert_eq!(read_line(b"{\"a\":\"x\",\"b\":\"\xff\"}", &path("a")), texts(&[("a", "x")]));
    }

    #[test]
    fn blank_lines_and_escaped_names() {
        assert_eq!(read_line(b" \t\r\x0b\x0c\n", &path("a")), Line::Blank);
        let segments = [Segment::Key { name: "a.b".into(), index: None }, Segment::Every];
        let found = read_line(br#"{"a.b":{"*":"s","c\\d":"t"}}"#, &segments);
        assert_eq!(found, texts(&[("a\\.b.\\*", "s"), ("a\\.b.c\\\\d", "t")]));
    }

    #[test]
    fn every_line_is_read_and_scanned_in_order() {
        let looping = "loadTools. ".repeat(60);
        let data = format!("{{\"t\":\"clean\"}}\n\n{{\"t\":[\"{looping}\",null,3]}}\nbroken\n{{\"t\":null}}");
        for threads in [None, Some(1), Some(2)] {
            let lines = scan_lines(data.as_bytes(), &path("t.*"), &DEFAULT_RULES, threads);
            let scans: Vec<&Scan<'_>> = lines.iter().map(|l| &l.scan).collect();
            let reached = |path: &str, value| Reached { path: format!("t.{path}"), value };
            assert_eq!(
                scans,
                [
                    &Scan::Read { rows: 0, told: vec![] },
                    &Scan::Blank,
                    &Scan::Read {
                        rows: 2,
                        told: vec![
                            Told {
                                slot: 0,
                                reached: reached("0", Value::Text(Cow::Borrowed(looping.as_str()))),
                                findings: scan_str(&looping, &DEFAULT_RULES),
                            },
                            Told { slot: 2, reached: reached("2", Value::Other(Kind::Number)), findings: vec![] },
                        ],
                    },
                    &Scan::Unread,
                    &Scan::Read { rows: 0, told: vec![] },
                ]
            );
            assert_eq!(&data[lines[3].bytes.clone()], "broken\n");
            assert_eq!(&data[lines[4].bytes.clone()], "{\"t\":null}");
        }
    }
}
