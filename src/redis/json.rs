//! The JSON of the Upstash REST protocol, and no more: request bodies are arrays of arrays of strings,
//! replies are values of any shape (`[{"result": ...}, {"error": "..."}]` with nested arrays,
//! integers, strings and null).
//!
//! Hand-written instead of `serde_json` to keep the WebAssembly package small. The parser takes any
//! JSON text (RFC 8259), so an unexpected reply is still read and reported; it never panics: malformed
//! input is an [`Error::MalformedReply`] saying what was expected where. Numbers are kept exact: an
//! integer that fits `u64` or `i64` is one, any other number keeps its text, unparsed.

use crate::error::{Error, Result};
use crate::number::parse_digits;
use std::fmt;

/// A JSON value.
#[derive(Clone, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object: its members in order (for a repeated name, the last one counts).
    Object(Vec<(String, Value)>),
}

/// A JSON number, exact.
#[derive(Clone, PartialEq)]
pub struct Number(Repr);

#[derive(Clone, PartialEq)]
enum Repr {
    /// A non-negative integer.
    Unsigned(u64),
    /// A negative integer.
    Negative(i64),
    /// Any other number (fractional, with an exponent, or too large), as written.
    Text(Box<str>),
}

impl Number {
    /// The number as an `i64`, if it is an integer in range.
    pub fn as_i64(&self) -> Option<i64> {
        match self.0 {
            Repr::Unsigned(value) => i64::try_from(value).ok(),
            Repr::Negative(value) => Some(value),
            Repr::Text(_) => None,
        }
    }

    /// The number as a `u64`, if it is a non-negative integer in range.
    pub fn as_u64(&self) -> Option<u64> {
        match self.0 {
            Repr::Unsigned(value) => Some(value),
            _ => None,
        }
    }
}

impl Number {
    fn write(&self, out: &mut String) {
        match &self.0 {
            Repr::Unsigned(value) => out.push_str(&value.to_string()),
            Repr::Negative(value) => out.push_str(&value.to_string()),
            Repr::Text(text) => out.push_str(text),
        }
    }
}

impl From<u64> for Number {
    fn from(value: u64) -> Self {
        Self(Repr::Unsigned(value))
    }
}

impl From<i64> for Number {
    fn from(value: i64) -> Self {
        match u64::try_from(value) {
            Ok(value) => Self(Repr::Unsigned(value)),
            Err(_) => Self(Repr::Negative(value)),
        }
    }
}

impl Value {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(text) => Some(text),
            _ => None,
        }
    }

    /// The number as an `i64`, if this is an integer in range.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Self::Number(number) => number.as_i64(),
            _ => None,
        }
    }

    /// The number as a `u64`, if this is a non-negative integer in range.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Self::Number(number) => number.as_u64(),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Self::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The member `name`, if this is an object that has one (the last, if it is repeated).
    pub fn get(&self, name: &str) -> Option<&Value> {
        match self {
            Self::Object(members) => members
                .iter()
                .rev()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value),
            _ => None,
        }
    }

    /// Takes the member `name` out, if this is an object that has one (the last, if it is repeated).
    pub fn take(&mut self, name: &str) -> Option<Value> {
        match self {
            Self::Object(members) => {
                let index = members.iter().rposition(|(key, _)| key == name)?;
                Some(members.swap_remove(index).1)
            }
            _ => None,
        }
    }

    /// Appends the value as compact JSON text.
    fn write(&self, out: &mut String) {
        match self {
            Self::Null => out.push_str("null"),
            Self::Bool(true) => out.push_str("true"),
            Self::Bool(false) => out.push_str("false"),
            Self::Number(number) => number.write(out),
            Self::String(text) => write_string(out, text),
            Self::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Self::Object(members) => {
                out.push('{');
                for (index, (key, value)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write_string(out, key);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Self {
        Self::String(text.to_owned())
    }
}

impl From<String> for Value {
    fn from(text: String) -> Self {
        Self::String(text)
    }
}

impl From<u64> for Value {
    fn from(value: u64) -> Self {
        Self::Number(value.into())
    }
}

impl From<i64> for Value {
    fn from(value: i64) -> Self {
        Self::Number(value.into())
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(items: Vec<T>) -> Self {
        Self::Array(items.into_iter().map(Into::into).collect())
    }
}

/// Compact JSON text.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write(&mut out);
        f.write_str(&out)
    }
}

/// The same compact JSON text as [`fmt::Display`], so that messages quote replies as they came.
impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The number as JSON text.
impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write(&mut out);
        f.write_str(&out)
    }
}

/// One command as JSON text: an array of strings.
pub fn encode_command(parts: &[&str]) -> String {
    let mut out = String::with_capacity(2 + parts.iter().map(|part| part.len() + 3).sum::<usize>());
    out.push('[');
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(&mut out, part);
    }
    out.push(']');
    out
}

/// Appends `text` as a JSON string: quotes, backslashes and control characters escaped, everything
/// else (non-ASCII included) as it is.
fn write_string(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let mut start = 0;
    for (index, byte) in text.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0C => "\\f",
            0x00..=0x1F => "",
            _ => continue,
        };
        // `byte` is ASCII, so `start..index` lies on character boundaries.
        out.push_str(&text[start..index]);
        if escape.is_empty() {
            out.push_str("\\u00");
            out.push(HEX[usize::from(byte >> 4)] as char);
            out.push(HEX[usize::from(byte & 0xF)] as char);
        } else {
            out.push_str(escape);
        }
        start = index + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// Parses one JSON value that makes up the whole of `text` (surrounding whitespace allowed).
pub fn parse(text: &str) -> Result<Value> {
    let mut parser = Parser { text, at: 0 };
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.at < text.len() {
        return Err(parser.error("the end of the text"));
    }
    Ok(value)
}

/// Arrays and objects nest at most this deep (`serde_json`'s limit), so that no input exhausts the stack.
const MAX_DEPTH: usize = 127;

struct Parser<'a> {
    text: &'a str,
    /// The byte offset of the next byte to read; always on a character boundary between tokens.
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// A malformed-reply error saying what was expected at the current offset, and what came.
    fn error(&self, expected: &str) -> Error {
        // Errors are raised on character boundaries; `get` keeps a mistake from panicking.
        let rest = self.text.get(self.at..).unwrap_or_default();
        let found = if rest.is_empty() {
            "the end".to_owned()
        } else {
            let mut found = "`".to_owned();
            found.extend(rest.chars().take(20));
            found.push('`');
            if rest.chars().nth(20).is_some() {
                found.push_str("...");
            }
            found
        };
        Error::MalformedReply {
            message: format!(
                "invalid JSON at byte {}: expected {expected}, found {found}",
                self.at
            ),
        }
    }

    /// Consumes `byte` after optional whitespace, or fails saying `expected`.
    fn expect(&mut self, byte: u8, expected: &str) -> Result<()> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(expected))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value> {
        self.skip_whitespace();
        if depth == MAX_DEPTH && matches!(self.peek(), Some(b'[' | b'{')) {
            return Err(self.error("at most 127 levels of nesting"));
        }
        match self.peek() {
            Some(b'"') => self.string().map(Value::String),
            Some(open @ (b'[' | b'{')) => {
                // Arrays and objects share one loop; an object's elements are named.
                self.at += 1;
                let object = open == b'{';
                let (close, expected) = if object {
                    (b'}', "`,` or `}`")
                } else {
                    (b']', "`,` or `]`")
                };
                let mut items = Vec::new();
                let mut members = Vec::new();
                self.skip_whitespace();
                if self.peek() != Some(close) {
                    loop {
                        if object {
                            self.skip_whitespace();
                            if self.peek() != Some(b'"') {
                                return Err(self.error("a member name (a string)"));
                            }
                            let name = self.string()?;
                            self.expect(b':', "`:`")?;
                            members.push((name, self.value(depth + 1)?));
                        } else {
                            items.push(self.value(depth + 1)?);
                        }
                        self.skip_whitespace();
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(byte) if byte == close => break,
                            _ => return Err(self.error(expected)),
                        }
                    }
                }
                self.at += 1;
                Ok(if object {
                    Value::Object(members)
                } else {
                    Value::Array(items)
                })
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => {
                let rest = &self.text[self.at..];
                let (len, value) = if rest.starts_with("null") {
                    (4, Value::Null)
                } else if rest.starts_with("true") {
                    (4, Value::Bool(true))
                } else if rest.starts_with("false") {
                    (5, Value::Bool(false))
                } else {
                    return Err(self.error("a JSON value"));
                };
                self.at += len;
                Ok(value)
            }
        }
    }

    /// A number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Result<Value> {
        let start = self.at;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let digits_start = self.at;
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("a digit")),
        }
        let digits_end = self.at;
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.at += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("a digit after `.`"));
            }
            self.digits();
            integer = false;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("a digit in the exponent"));
            }
            self.digits();
            integer = false;
        }
        let text = &self.text[start..self.at];
        let magnitude = if integer {
            parse_digits(&self.text.as_bytes()[digits_start..digits_end])
        } else {
            None
        };
        let repr = match (magnitude, negative) {
            (Some(magnitude), false) => Repr::Unsigned(magnitude),
            // -0 stays text, so that it is written back as it came.
            (Some(magnitude @ 1..=0x8000_0000_0000_0000), true) => {
                Repr::Negative(0i64.wrapping_sub_unsigned(magnitude))
            }
            _ => Repr::Text(text.into()),
        };
        Ok(Value::Number(Number(repr)))
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }

    /// A string, the current byte being its opening quote.
    fn string(&mut self) -> Result<String> {
        self.at += 1;
        let mut out = String::new();
        let mut start = self.at;
        loop {
            match self.peek() {
                None => return Err(self.error("`\"` closing the string")),
                Some(b'"') => {
                    out.push_str(&self.text[start..self.at]);
                    self.at += 1;
                    return Ok(out);
                }
                Some(0x00..=0x1F) => {
                    return Err(self.error("a character other than a control character"))
                }
                Some(b'\\') => {
                    out.push_str(&self.text[start..self.at]);
                    self.at += 1;
                    let escape = self.peek();
                    self.at += 1;
                    out.push(match escape {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => self.unicode_escape()?,
                        _ => {
                            self.at -= 1;
                            return Err(self.error("an escape (one of \"\\/bfnrtu)"));
                        }
                    });
                    start = self.at;
                }
                // Any other byte: ASCII or part of a UTF-8 sequence, copied as it is.
                Some(_) => self.at += 1,
            }
        }
    }

    /// The character of a `\u` escape, the current byte being its first hex digit; a UTF-16 surrogate
    /// pair is two escapes.
    fn unicode_escape(&mut self) -> Result<char> {
        let high = self.hex4()?;
        let code = match high {
            0xD800..=0xDBFF => {
                if !self.text[self.at..].starts_with("\\u") {
                    return Err(self.error("`\\u` and a low surrogate after a high surrogate"));
                }
                self.at += 2;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    self.at -= 4;
                    return Err(self.error("a low surrogate (DC00 to DFFF)"));
                }
                0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => {
                self.at -= 4;
                return Err(self.error("a high surrogate (D800 to DBFF) before a low one"));
            }
            code => code,
        };
        char::from_u32(code).ok_or_else(|| self.error("a Unicode scalar value"))
    }

    /// Four hex digits.
    fn hex4(&mut self) -> Result<u32> {
        let mut code = 0;
        for _ in 0..4 {
            let digit = match self.peek() {
                Some(byte @ b'0'..=b'9') => byte - b'0',
                Some(byte @ b'a'..=b'f') => byte - b'a' + 10,
                Some(byte @ b'A'..=b'F') => byte - b'A' + 10,
                _ => return Err(self.error("a hex digit")),
            };
            code = code * 16 + u32::from(digit);
            self.at += 1;
        }
        Ok(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn malformed(text: &str) -> String {
        match parse(text) {
            Err(Error::MalformedReply { message }) => message,
            other => panic!("{text:?} parsed as {other:?}"),
        }
    }

    #[test]
    fn reads_pipeline_replies() {
        let reply = parse(
            r#"[{"result":"OK"},{"result":null},{"result":[1,0,-1,"6",[]]},{"error":"NOSCRIPT No matching script"}]"#,
        )
        .unwrap();
        let Value::Array(items) = &reply else {
            panic!("{reply}")
        };
        assert_eq!(items[0].get("result"), Some(&Value::from("OK")));
        assert_eq!(items[1].get("result"), Some(&Value::Null));
        let fields = items[2].get("result").and_then(Value::as_array).unwrap();
        assert_eq!(fields[0].as_u64(), Some(1));
        assert_eq!(fields[2].as_i64(), Some(-1));
        assert_eq!(fields[2].as_u64(), None);
        assert_eq!(fields[3].as_str(), Some("6"));
        assert_eq!(fields[4], Value::Array(Vec::new()));
        assert_eq!(
            items[3].get("error").and_then(Value::as_str),
            Some("NOSCRIPT No matching script")
        );
        assert_eq!(items[3].get("result"), None);
    }

    #[test]
    fn reads_every_kind_of_value_with_whitespace_anywhere() {
        let value =
            parse(" \t\r\n{ \"a\" : [ true , false , null , { } , [ ] , \"\" ] , \"b\" : 1 } \n")
                .unwrap();
        assert_eq!(
            value.to_string(),
            r#"{"a":[true,false,null,{},[],""],"b":1}"#
        );
        assert_eq!(parse("0").unwrap().as_u64(), Some(0));
        assert_eq!(parse("\"x\"").unwrap().as_str(), Some("x"));
    }

    #[test]
    fn the_last_of_repeated_members_counts() {
        let mut value = parse(r#"{"result":1,"result":2}"#).unwrap();
        assert_eq!(value.get("result").and_then(Value::as_u64), Some(2));
        assert_eq!(value.take("result").and_then(|v| v.as_u64()), Some(2));
        assert_eq!(value.take("result").and_then(|v| v.as_u64()), Some(1));
        assert_eq!(value.take("result"), None);
        assert_eq!(Value::Null.get("result"), None);
    }

    #[test]
    fn integers_are_exact_and_other_numbers_keep_their_text() {
        let integer = |text: &str| parse(text).unwrap();
        assert_eq!(integer("18446744073709551615").as_u64(), Some(u64::MAX));
        assert_eq!(integer("18446744073709551615").as_i64(), None);
        assert_eq!(integer("9223372036854775807").as_i64(), Some(i64::MAX));
        assert_eq!(integer("-9223372036854775808").as_i64(), Some(i64::MIN));
        assert_eq!(integer("-1").as_i64(), Some(-1));
        for text in [
            "18446744073709551616",
            "-9223372036854775809",
            "1.5",
            "-0",
            "-0.0",
            "1e3",
            "1E+3",
            "2.5e-7",
            "123456789012345678901234567890",
        ] {
            let value = parse(text).unwrap();
            assert_eq!((value.as_i64(), value.as_u64()), (None, None), "{text}");
            assert_eq!(value.to_string(), text);
        }
    }

    #[test]
    fn unescapes_strings() {
        let text =
            parse(r#""q\" b\\ s\/ \b\f\n\r\t \u0041\u00e9\u20ac \ud83d\ude00 raw é€😀""#).unwrap();
        assert_eq!(
            text.as_str(),
            Some("q\" b\\ s/ \u{8}\u{c}\n\r\t Aé€ 😀 raw é€😀")
        );
        assert_eq!(parse(r#""\u0000""#).unwrap().as_str(), Some("\0"));
        assert_eq!(
            parse(r#""\uDBFF\uDFFF""#).unwrap().as_str(),
            Some("\u{10FFFF}")
        );
    }

    #[test]
    fn writes_strings_as_serde_json_does() {
        let mut parts: Vec<String> = (0u8..0x80).map(|byte| (byte as char).to_string()).collect();
        parts.extend(
            [
                "",
                "plain",
                "é€😀\u{7f}\u{2028}",
                "a\"b\\c\nd",
                "\u{1}\u{1f}",
            ]
            .map(str::to_owned),
        );
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let body = encode_command(&refs);
        assert_eq!(body, serde_json::to_string(&parts).unwrap());
        // And reads back what it writes.
        let read = parse(&body).unwrap();
        let read: Vec<&str> = read
            .as_array()
            .unwrap()
            .iter()
            .map(|part| part.as_str().unwrap())
            .collect();
        assert_eq!(read, parts);
        assert_eq!(encode_command(&[]), "[]");
    }

    #[test]
    fn display_is_json_that_serde_json_reads_back_the_same() {
        for text in [
            r#"[{"result":[1,-2,"x\ny",null,true,[{"a":{}}]]},{"error":"ERR \"quoted\""}]"#,
            r#"{"é":"€","\u0001":"\u001f","n":[0,18446744073709551615,-9223372036854775808]}"#,
        ] {
            let ours = parse(text).unwrap();
            let theirs: serde_json::Value = serde_json::from_str(text).unwrap();
            let reread: serde_json::Value = serde_json::from_str(&ours.to_string()).unwrap();
            assert_eq!(reread, theirs);
            assert_eq!(format!("{ours:?}"), ours.to_string());
        }
    }

    #[test]
    fn nesting_is_capped_without_exhausting_the_stack() {
        let nested = |depth: usize| "[".repeat(depth) + &"]".repeat(depth);
        // The same limit as serde_json's.
        for depth in [MAX_DEPTH, MAX_DEPTH + 1] {
            let theirs = serde_json::from_str::<serde_json::Value>(&nested(depth));
            assert_eq!(parse(&nested(depth)).is_ok(), theirs.is_ok(), "{depth}");
        }
        assert!(parse(&nested(MAX_DEPTH)).is_ok());
        assert!(parse(&("[".repeat(MAX_DEPTH) + "1" + &"]".repeat(MAX_DEPTH))).is_ok());
        assert!(malformed(&nested(MAX_DEPTH + 1)).contains("nesting"));
        assert!(malformed(&"[".repeat(1_000_000)).contains("nesting"));
        assert!(malformed(&"{\"a\":".repeat(1_000)).contains("nesting"));
    }

    #[test]
    fn malformed_input_is_a_typed_error_saying_where_and_what() {
        for (text, expected) in [
            ("", "0: expected a JSON value, found the end"),
            ("[1,]", "3: expected a JSON value, found `]`"),
            ("[1 2]", "3: expected `,` or `]`, found `2]`"),
            ("{\"a\" 1}", "5: expected `:`, found `1}`"),
            (
                "{1:2}",
                "1: expected a member name (a string), found `1:2}`",
            ),
            (
                "{\"a\":1,}",
                "7: expected a member name (a string), found `}`",
            ),
            ("{\"a\":1 ", "7: expected `,` or `}`, found the end"),
            ("[] []", "3: expected the end of the text, found `[]`"),
            (
                "\"abc",
                "4: expected `\"` closing the string, found the end",
            ),
            (
                "\"a\nb\"",
                "2: expected a character other than a control character",
            ),
            ("\"\\x\"", "2: expected an escape"),
            (
                "\"\\",
                "2: expected an escape (one of \"\\/bfnrtu), found the end",
            ),
            ("\"\\u12\"", "5: expected a hex digit, found `\"`"),
            ("\"\\ud83d\"", "7: expected `\\u` and a low surrogate"),
            ("\"\\ud83d\\u0041\"", "9: expected a low surrogate"),
            ("\"\\ude00\"", "3: expected a high surrogate"),
            ("01", "1: expected the end of the text, found `1`"),
            ("-", "1: expected a digit, found the end"),
            ("+1", "0: expected a JSON value, found `+1`"),
            ("1.", "2: expected a digit after `.`, found the end"),
            (".5", "0: expected a JSON value"),
            ("1e", "2: expected a digit in the exponent"),
            ("1e+", "3: expected a digit in the exponent"),
            ("nul", "0: expected a JSON value, found `nul`"),
            ("True", "0: expected a JSON value"),
            ("NaN", "0: expected a JSON value"),
            ("\u{feff}[]", "0: expected a JSON value, found `\u{feff}[]`"),
            ("[\"é\" é]", "6: expected `,` or `]`, found `é]`"),
            (
                "<html>a long error page from a proxy</html>",
                "0: expected a JSON value, found `<html>a long error p`...",
            ),
        ] {
            let message = malformed(text);
            assert!(
                message.starts_with(&("invalid JSON at byte ".to_owned() + expected)),
                "{text:?}: {message}"
            );
        }
    }

    #[test]
    fn no_prefix_of_a_valid_text_panics() {
        let text = r#" [{"result":[1,-20,"é\u00e9\ud83d\ude00\n",null,true,false,1.5e-3,{}]},{"error":"E"}] "#;
        for end in (0..=text.len()).filter(|&end| text.is_char_boundary(end)) {
            let _ = parse(&text[..end]);
            let _ = parse(&text[end..]);
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_text_parses_or_fails_like_serde_json(text in ".{0,40}") {
            let theirs = serde_json::from_str::<serde_json::Value>(&text);
            match parse(&text) {
                Ok(ours) => {
                    let theirs = theirs.expect("serde_json refused what the crate read");
                    // Numbers serde_json reads as floats it writes its own way: compare integers only.
                    if !ours.to_string().contains(['.', 'e', 'E']) {
                        let reread: serde_json::Value = serde_json::from_str(&ours.to_string()).unwrap();
                        prop_assert_eq!(reread, theirs);
                    }
                }
                Err(Error::MalformedReply { .. }) => prop_assert!(theirs.is_err(), "{}", text),
                Err(other) => prop_assert!(false, "{}", other),
            }
        }

        #[test]
        fn any_strings_round_trip(parts in proptest::collection::vec(".{0,12}", 0..6)) {
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            let body = encode_command(&refs);
            prop_assert_eq!(&body, &serde_json::to_string(&parts).unwrap());
            let read = parse(&body).unwrap();
            let read: Vec<String> = read
                .as_array()
                .unwrap()
                .iter()
                .map(|part| part.as_str().unwrap().to_owned())
                .collect();
            prop_assert_eq!(read, parts);
        }

        #[test]
        fn json_shaped_text_parses_or_fails_like_serde_json(
            text in r#"[\[\]{}",:0-9a-z\\ .eE+-]{0,30}"#
        ) {
            let theirs = serde_json::from_str::<serde_json::Value>(&text);
            prop_assert_eq!(parse(&text).is_ok(), theirs.is_ok(), "{}", text);
        }
    }
}
