//! Commands written as the Upstash REST protocol sends them, a JSON array of strings, straight into
//! one buffer: a key or an argument is escaped by serde_json where it is written, never made a
//! `String` of its own first.

/// Strings of a command, each written as a JSON string after a comma (`,"a","b:1"`), and how many.
#[derive(Debug, Clone, Default)]
pub struct Strings {
    json: Vec<u8>,
    count: usize,
}

impl Strings {
    /// No strings, with room for those of a decision's keys or arguments.
    pub fn new() -> Self {
        Self {
            json: Vec::with_capacity(96),
            count: 0,
        }
    }

    /// No strings, with room for `bytes` of them.
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            json: Vec::with_capacity(bytes),
            count: 0,
        }
    }

    /// Adds `text`.
    pub fn push(&mut self, text: &str) -> &mut Self {
        self.open(text);
        self.close()
    }

    /// Adds `text` followed by `suffix` as one string (such as `<key>:gcra`); `suffix` is ASCII with
    /// nothing JSON escapes (no `"`, `\\` or control character), so it is written as it is.
    pub fn push_suffixed(&mut self, text: &str, suffix: &'static str) -> &mut Self {
        debug_assert!(written_as_is(suffix));
        self.open(text);
        self.json.extend_from_slice(suffix.as_bytes());
        self.close()
    }

    /// Pushes `text` as it is: a command's name or a script's SHA-1, which JSON needs no escape in.
    pub fn push_plain(&mut self, text: &'static str) -> &mut Self {
        debug_assert!(written_as_is(text));
        self.json.extend_from_slice(b",\"");
        self.json.extend_from_slice(text.as_bytes());
        self.close()
    }

    /// Adds `number` in decimal.
    pub fn push_number(&mut self, number: u64) -> &mut Self {
        self.json.extend_from_slice(b",\"");
        self.close_with_number(number)
    }

    /// Adds `value` as [`crate::number::decimal`] writes it (a whole number without a `String` of its
    /// own).
    pub fn push_decimal(&mut self, value: f64) -> &mut Self {
        let Some(integer) = crate::number::whole(value) else {
            return self.push(&crate::number::decimal(value));
        };
        self.json.extend_from_slice(b",\"");
        self.close_with_number(integer)
    }

    /// Adds, for each of `numbers`, `text`, a colon and the number in decimal as one string (such as
    /// a key and each of its windows): `text` escaped once, its bytes copied for the numbers after
    /// the first.
    pub fn push_numbered(
        &mut self,
        text: &str,
        numbers: impl IntoIterator<Item = u64>,
    ) -> &mut Self {
        let mut numbers = numbers.into_iter();
        let Some(first) = numbers.next() else {
            return self;
        };
        let start = self.json.len();
        self.open(text);
        self.json.push(b':');
        let head = start..self.json.len();
        self.close_with_number(first);
        for number in numbers {
            self.json.extend_from_within(head.clone());
            self.close_with_number(number);
        }
        self
    }

    /// Starts a string with `text`, escaped by serde_json, left open for what follows it.
    fn open(&mut self, text: &str) {
        self.json.push(b',');
        // Writing a `str` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut self.json, text);
        self.json.pop();
    }

    /// Ends the string being written with `number`'s digits, which need no escaping.
    fn close_with_number(&mut self, number: impl itoa::Integer) -> &mut Self {
        self.json
            .extend_from_slice(itoa::Buffer::new().format(number).as_bytes());
        self.close()
    }

    /// Ends the string being written, and counts it.
    fn close(&mut self) -> &mut Self {
        self.json.push(b'"');
        self.count += 1;
        self
    }

    /// How many strings there are.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Whether JSON writes `text` in a string as it is: printable ASCII, no `"` and no `\\`.
fn written_as_is(text: &str) -> bool {
    text.bytes()
        .all(|byte| byte.is_ascii_graphic() && byte != b'"' && byte != b'\\')
}

/// The strings of `parts`, one after the other, as the JSON array of a command (with room for the
/// brackets of a `/pipeline` body around it).
pub fn command(parts: &[&Strings]) -> String {
    let bytes = parts
        .iter()
        .map(|strings| strings.json.len())
        .sum::<usize>();
    let mut command = Vec::with_capacity(bytes + 4);
    for strings in parts {
        command.extend_from_slice(&strings.json);
    }
    // Every string was written after a comma: the first comma is the array's opening bracket.
    match command.first_mut() {
        Some(comma) => *comma = b'[',
        None => command.push(b'['),
    }
    command.push(b']');
    // Only serde_json's output of `str`s, plain ASCII and punctuation was written: always UTF-8.
    String::from_utf8(command).unwrap_or_default()
}

impl<S: AsRef<str>> FromIterator<S> for Strings {
    fn from_iter<I: IntoIterator<Item = S>>(strings: I) -> Self {
        let mut all = Self::new();
        for text in strings {
            all.push(text.as_ref());
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_where_they_are_written() {
        let mut strings = Strings::new();
        strings
            .push("k\"\\\n")
            .push("é😀")
            .push_number(u64::MAX)
            .push_suffixed("a\"", ":7")
            .push_suffixed("\u{1}", "")
            .push("")
            .push_numbered("\"k", [0])
            .push_numbered("none", [])
            .push_numbered("w\"", 7..=9)
            .push_number(0);
        assert_eq!(strings.len(), 11);
        let name: Strings = ["SET\t"].into_iter().collect();
        let command = command(&[&name, &strings]);
        assert_eq!(
            command,
            r#"["SET\t","k\"\\\n","é😀","18446744073709551615","a\":7","\u0001","","\"k:0","w\":7","w\":8","w\":9","0"]"#
        );
        let parsed: Vec<String> = serde_json::from_str(&command).unwrap();
        assert_eq!(parsed[4], "a\":7");
    }

    #[test]
    fn a_command_is_each_set_of_strings_in_turn() {
        let mut head = Strings::new();
        head.push_plain("EVALSHA").push_plain("f00").push_number(2);
        let keys: Strings = ["a", "b"].into_iter().collect();
        let args: Strings = ["1"].into_iter().collect();
        assert_eq!(keys.len(), 2);
        assert_eq!(
            command(&[&head, &keys, &args]),
            r#"["EVALSHA","f00","2","a","b","1"]"#
        );
        let ping: Strings = ["PING"].into_iter().collect();
        assert_eq!(command(&[&ping]), r#"["PING"]"#);
        assert_eq!(command(&[&Strings::default()]), "[]");
        assert!(Strings::default().is_empty());
    }
}
