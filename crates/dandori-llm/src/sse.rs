//! Server-sent events: bytes in, `(event, data)` frames out.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// Incremental parser; feed it chunks as they arrive, in any split.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: String,
    pending_bytes: Vec<u8>,
}

impl SseParser {
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        // A chunk may end inside a UTF-8 sequence: keep the tail for the next one.
        self.pending_bytes.extend_from_slice(chunk);
        let mut valid = match std::str::from_utf8(&self.pending_bytes) {
            Ok(s) => s.len(),
            Err(e) => e.valid_up_to(),
        };
        // A `\r` at the end may be the first half of `\r\n`.
        if valid > 0 && self.pending_bytes[valid - 1] == b'\r' {
            valid -= 1;
        }
        let text = String::from_utf8_lossy(&self.pending_bytes[..valid]).into_owned();
        self.pending_bytes.drain(..valid);
        self.buffer.push_str(&text.replace("\r\n", "\n"));
        let mut events = Vec::new();
        while let Some(end) = self.buffer.find("\n\n") {
            let block: String = self.buffer.drain(..end + 2).collect();
            if let Some(event) = parse_block(&block) {
                events.push(event);
            }
        }
        events
    }

    /// Whatever remains when the body ends (a final event without its blank line).
    pub fn finish(&mut self) -> Option<SseEvent> {
        let tail = String::from_utf8_lossy(&std::mem::take(&mut self.pending_bytes)).into_owned();
        let mut rest = std::mem::take(&mut self.buffer);
        rest.push_str(&tail);
        parse_block(&rest)
    }
}

fn parse_block(block: &str) -> Option<SseEvent> {
    let mut event = None;
    let mut data: Vec<&str> = Vec::new();
    for line in block.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => event = Some(value.to_string()),
            "data" => data.push(value),
            _ => {}
        }
    }
    if data.is_empty() && event.is_none() {
        return None;
    }
    Some(SseEvent {
        event,
        data: data.join("\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_anywhere() {
        let input = "event: a\ndata: {\"x\":\"é\"}\n\n: comment\n\ndata: one\r\ndata: two\r\n\r\ndata: [DONE]\n\n";
        let bytes = input.as_bytes();
        for split in 1..bytes.len() {
            let mut p = SseParser::default();
            let mut events = p.feed(&bytes[..split]);
            events.extend(p.feed(&bytes[split..]));
            assert_eq!(
                events,
                vec![
                    SseEvent {
                        event: Some("a".into()),
                        data: "{\"x\":\"é\"}".into()
                    },
                    SseEvent {
                        event: None,
                        data: "one\ntwo".into()
                    },
                    SseEvent {
                        event: None,
                        data: "[DONE]".into()
                    },
                ],
                "split at {split}"
            );
        }
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// However the bytes are split, the events are the same, and nothing panics.
        #[test]
        fn split_does_not_matter(bytes in proptest::collection::vec(any::<u8>(), 0..300), split in 0usize..300) {
            let split = split.min(bytes.len());
            let mut whole = SseParser::default();
            let mut expected = whole.feed(&bytes);
            expected.extend(whole.finish());
            let mut parts = SseParser::default();
            let mut got = parts.feed(&bytes[..split]);
            got.extend(parts.feed(&bytes[split..]));
            got.extend(parts.finish());
            prop_assert_eq!(got, expected);
        }
    }
}
