//! The scanner's JSON-lines reader: a stream cut into chunks of whole lines ([`LineChunks`],
//! [`LineCutter`]), the values a field path reaches in each line read and scanned in parallel
//! ([`scan_lines`]), and the chunks scanned one after the other, ahead of whoever reports them
//! ([`ScannedChunks`]) or as they are taken ([`scan_chunk`]).

mod line_chunks;
mod read;
mod stream;

pub use line_chunks::{LineChunks, LineCutter};
pub use read::{read_line, scan_line, scan_lines, Kind, Line, Reached, Scan, ScannedLine, Segment, Told, Value};
pub use stream::{scan_chunk, ChunkResult, FoundText, ScannedChunk, ScannedChunks, StreamError};
