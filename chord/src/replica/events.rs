//! An incremental `text/event-stream` parser: bytes in, the data of each event out.
//!
//! It follows the HTML standard's rules for the fields a Durable Streams server sends: lines
//! end in CR, LF or CRLF (also split across reads); `data:` lines join with `\n`; a blank line
//! ends an event, named by its `event:` field (`message` without one); comments, `id:` and
//! `retry:` are read past. Unlike a browser it refuses, rather than repairs, what chord never
//! sends: text that is not UTF-8, and events or lines over a size bound.

/// Why a stream of events could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EventError {
    /// A line or an event grew past the bound.
    #[error("an event is larger than {0} bytes")]
    TooLarge(usize),
    /// A line is not UTF-8.
    #[error("an event line is not UTF-8")]
    NotUtf8,
}

/// Parses one stream. Feed it bytes with [`push`](Parser::push), then take the complete
/// events with [`next_event`](Parser::next_event).
#[derive(Debug)]
pub(crate) struct Parser {
    max: usize,
    /// Bytes read; those before `pos` are consumed.
    pending: Vec<u8>,
    pos: usize,
    /// Where the search for the end of the current line resumes.
    scanned: usize,
    /// The last line ended in CR: an LF right after it belongs to it.
    after_cr: bool,
    /// At the very start of the stream, where a byte-order mark is dropped.
    at_start: bool,
    event: Event,
}

#[derive(Debug, Default)]
struct Event {
    data: String,
    has_data: bool,
    name: String,
}

/// One event: its name and its data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Dispatched {
    /// The `event:` field, `message` when absent.
    pub(crate) name: String,
    /// The `data:` lines, joined.
    pub(crate) data: String,
}

impl Parser {
    /// A parser refusing lines and events over `max` bytes.
    pub(crate) fn new(max: usize) -> Parser {
        Parser {
            max,
            pending: Vec::new(),
            pos: 0,
            scanned: 0,
            after_cr: false,
            at_start: true,
            event: Event::default(),
        }
    }

    /// Adds bytes read from the stream.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            self.pending.drain(..self.pos);
            self.scanned -= self.pos;
            self.pos = 0;
        }
        self.pending.extend_from_slice(bytes);
    }

    /// The next complete event, if the bytes pushed so far hold one.
    pub(crate) fn next_event(&mut self) -> Result<Option<Dispatched>, EventError> {
        loop {
            let unread = &self.pending[self.pos..];
            if self.at_start {
                if unread.len() < 3 && b"\xEF\xBB\xBF".starts_with(unread) {
                    return Ok(None); // maybe a byte-order mark, not yet whole
                }
                if unread.starts_with(b"\xEF\xBB\xBF") {
                    self.pos += 3;
                    self.scanned = self.pos;
                }
                self.at_start = false;
                continue;
            }
            if self.after_cr {
                match unread.first() {
                    None => return Ok(None),
                    Some(b'\n') => {
                        self.pos += 1;
                        self.scanned = self.pos;
                    }
                    Some(_) => {}
                }
                self.after_cr = false;
                continue;
            }
            let found = self.pending[self.scanned..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r');
            let Some(offset) = found else {
                self.scanned = self.pending.len();
                if self.scanned - self.pos > self.max {
                    return Err(EventError::TooLarge(self.max));
                }
                return Ok(None);
            };
            let end = self.scanned + offset;
            let line = &self.pending[self.pos..end];
            if line.len() > self.max {
                return Err(EventError::TooLarge(self.max));
            }
            let dispatched = self.event.line(line, self.max)?;
            self.after_cr = self.pending[end] == b'\r';
            self.pos = end + 1;
            self.scanned = self.pos;
            if let Some(event) = dispatched {
                return Ok(Some(event));
            }
        }
    }
}

impl Event {
    fn line(&mut self, line: &[u8], max: usize) -> Result<Option<Dispatched>, EventError> {
        if line.is_empty() {
            let data = std::mem::take(&mut self.data);
            let mut name = std::mem::take(&mut self.name);
            let dispatch = self.has_data;
            self.has_data = false;
            if name.is_empty() {
                name.push_str("message");
            }
            return Ok(dispatch.then_some(Dispatched { name, data }));
        }
        let line = std::str::from_utf8(line).map_err(|_| EventError::NotUtf8)?;
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > max {
                    return Err(EventError::TooLarge(max));
                }
            }
            "event" => {
                if value.len() > max {
                    return Err(EventError::TooLarge(max));
                }
                self.name = value.to_owned();
            }
            _ => {} // id, retry, and fields the standard says to ignore
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Result<Vec<String>, EventError> {
        let mut parser = Parser::new(1024);
        let mut out = Vec::new();
        for chunk in chunks {
            parser.push(chunk);
            while let Some(event) = parser.next_event()? {
                if event.name == "message" {
                    out.push(event.data);
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn events_end_at_blank_lines_whatever_the_line_endings() {
        let text = b"retry: 1000\nid: 1\ndata: [1]\n\nid: 2\r\ndata: [2]\r\n\r\n: keep-alive\r\rdata:[3]\r\r";
        assert_eq!(events(&[text]).unwrap(), ["[1]", "[2]", "[3]"]);
        // Split anywhere, byte by byte included, the result is the same.
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(events(&bytes).unwrap(), ["[1]", "[2]", "[3]"]);
        for cut in 0..text.len() {
            let (a, b) = text.split_at(cut);
            assert_eq!(
                events(&[a, b]).unwrap(),
                ["[1]", "[2]", "[3]"],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn data_lines_join_and_events_keep_their_names() {
        let text = b"\xEF\xBB\xBFdata: a\ndata\ndata:  b\n\nevent: other\ndata: x\n\nevent: message\ndata: y\n\ndata: partial";
        assert_eq!(events(&[text]).unwrap(), ["a\n\n b", "y"]);
        let mut parser = Parser::new(1024);
        parser.push(b"event: control\ndata: {}\n\n");
        let event = parser.next_event().unwrap().unwrap();
        assert_eq!(
            (event.name.as_str(), event.data.as_str()),
            ("control", "{}")
        );
    }

    #[test]
    fn oversized_and_invalid_input_is_refused() {
        let long = vec![b'x'; 2000];
        assert_eq!(events(&[&long]), Err(EventError::TooLarge(1024)));
        let mut many = Vec::new();
        for _ in 0..200 {
            many.extend_from_slice(b"data: 0123456789\n");
        }
        assert_eq!(events(&[&many]), Err(EventError::TooLarge(1024)));
        assert_eq!(events(&[b"data: \xFF\n\n"]), Err(EventError::NotUtf8));
    }
}
