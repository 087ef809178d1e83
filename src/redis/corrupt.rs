//! The scripts' reply for state they cannot read: `CORRUPTSTATE <length of key> <key> <what>`, read
//! back as [`Error::CorruptState`]. The key's length comes first because keys may hold spaces.

use crate::error::Error;

/// The code a script's error reply starts with when the state it read is corrupt.
const CODE: &str = "CORRUPTSTATE ";

/// [`Error::CorruptState`] if `message` is a script's `CORRUPTSTATE` reply, else `None`.
pub(super) fn parse(message: &str) -> Option<Error> {
    let rest = message.strip_prefix(CODE)?;
    let (length, rest) = rest.split_once(' ')?;
    let length: usize = length.parse().ok()?;
    let key = rest.get(..length)?;
    let what = rest.get(length..)?.strip_prefix(' ')?;
    Some(Error::CorruptState {
        key: key.to_owned(),
        message: what.to_owned(),
    })
}

/// [`Error::CorruptState`] for `key`, saying `message`.
pub(crate) fn corrupt(key: &str, message: impl Into<String>) -> Error {
    Error::CorruptState {
        key: key.to_owned(),
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_state_reply_names_its_key_even_with_spaces() {
        assert_eq!(
            parse("CORRUPTSTATE 7 a b:c:1 holds \"nan\", not an integer counter"),
            Some(corrupt("a b:c:1", "holds \"nan\", not an integer counter"))
        );
        assert_eq!(parse("CORRUPTSTATE 0  x"), Some(corrupt("", "x")));
        for other in [
            "ERR CORRUPTSTATE 1 k x",
            "CORRUPTSTATE x k y",
            "CORRUPTSTATE 9 k y",
            "CORRUPTSTATE 1 kx",
            "CORRUPTSTATE 1 é y",
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }
}
