//! A Lua script with its SHA-1, run as EVALSHA first and EVAL only when Redis does not know it.

use super::json::{self, Value};
use super::rest::RestClient;
use crate::error::{Error, Result};
use crate::transport::Transport;

/// A Lua script and its SHA-1.
///
/// The SHA-1 is computed by [`Script::new`], a `const fn`: for the crate's own scripts (statics) the
/// compiler computes it, so no SHA-1 code ships in the binary.
pub struct Script {
    name: &'static str,
    source: &'static str,
    sha1: [u8; 40],
}

impl Script {
    /// A script called `name` (for messages) with the text `source`.
    pub const fn new(name: &'static str, source: &'static str) -> Self {
        Self {
            name,
            source,
            sha1: sha1_hex(source.as_bytes()),
        }
    }

    /// The script's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The script's Lua text.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The hex SHA-1 of the text, as EVALSHA and SCRIPT LOAD name it.
    pub fn sha1(&self) -> &str {
        // Lowercase hex digits only, so always UTF-8.
        std::str::from_utf8(&self.sha1).unwrap_or_default()
    }

    /// Runs the script with `keys` and `args`: EVALSHA, then EVAL once if Redis answers NOSCRIPT
    /// (which also caches the script for the next call).
    pub async fn run<T: Transport>(
        &self,
        client: &RestClient<T>,
        keys: &[String],
        args: &[String],
    ) -> Result<Value> {
        let mut eval = false;
        loop {
            let command = {
                let sha1 = self.sha1_string();
                let count = keys.len().to_string();
                let (verb, script) = if eval {
                    ("EVAL", self.source)
                } else {
                    ("EVALSHA", sha1.as_str())
                };
                let mut parts = vec![verb, script, &count];
                parts.extend(keys.iter().chain(args).map(String::as_str));
                json::encode_command(&parts)
            };
            match client.send(command).await {
                Err(Error::Redis { message }) if !eval && message.starts_with("NOSCRIPT") => {
                    eval = true;
                }
                reply => return reply,
            }
        }
    }

    /// The hex SHA-1 as a `String`, without [`Script::sha1`]'s UTF-8 check (0.3 KB of wasm).
    fn sha1_string(&self) -> String {
        self.sha1.iter().map(|&digit| char::from(digit)).collect()
    }
}

/// The SHA-1 (FIPS 180-4) of `data` in lowercase hex, computable at compile time.
const fn sha1_hex(data: &[u8]) -> [u8; 40] {
    let mut state: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    // The message, a 1 bit, zeros, and the length in bits, in 64-byte blocks.
    let blocks = (data.len() + 8) / 64 + 1;
    let mut block = 0;
    while block < blocks {
        let mut words = [0u32; 80];
        let mut i = 0;
        while i < 64 {
            let index = block * 64 + i;
            let byte = if index < data.len() {
                data[index]
            } else if index == data.len() {
                0x80
            } else if index >= blocks * 64 - 8 {
                let shift = (blocks * 64 - 1 - index) * 8;
                ((data.len() as u64 * 8) >> shift) as u8
            } else {
                0
            };
            words[i / 4] |= (byte as u32) << (24 - (i % 4) * 8);
            i += 1;
        }
        let mut t = 16;
        while t < 80 {
            words[t] = (words[t - 3] ^ words[t - 8] ^ words[t - 14] ^ words[t - 16]).rotate_left(1);
            t += 1;
        }
        let [mut a, mut b, mut c, mut d, mut e] = state;
        let mut t = 0;
        while t < 80 {
            let (f, k) = match t / 20 {
                0 => ((b & c) | (!b & d), 0x5A82_7999),
                1 => (b ^ c ^ d, 0x6ED9_EBA1),
                2 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let next = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(words[t]);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = next;
            t += 1;
        }
        state[0] = state[0].wrapping_add(a);
        state[1] = state[1].wrapping_add(b);
        state[2] = state[2].wrapping_add(c);
        state[3] = state[3].wrapping_add(d);
        state[4] = state[4].wrapping_add(e);
        block += 1;
    }
    let mut hex = [0u8; 40];
    let mut i = 0;
    while i < 40 {
        let nibble = (state[i / 8] >> (28 - (i % 8) * 4)) & 0xF;
        hex[i] = b"0123456789abcdef"[nibble as usize];
        i += 1;
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha1(text: &str) -> String {
        String::from_utf8(sha1_hex(text.as_bytes()).to_vec()).unwrap()
    }

    #[test]
    fn sha1_matches_the_standard_test_vectors() {
        assert_eq!(sha1(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(sha1("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        assert_eq!(
            sha1(&"a".repeat(1_000_000)),
            "34aa973cd4c4daa4f61eeb2bdbad27316534016f"
        );
    }

    #[test]
    fn sha1_at_every_padding_boundary_matches_a_reference() {
        // Lengths around 55/56/64 bytes exercise the one- and two-block paddings.
        for len in 0..200 {
            let text: String = (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            assert_eq!(
                sha1(&text),
                sha1_smol::Sha1::from(&text).digest().to_string(),
                "length {len}"
            );
        }
    }

    #[test]
    fn scripts_are_the_prelude_and_their_file_with_comment_lines_blanked_and_no_indentation() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/algorithm/");
        let read = |file: &str| std::fs::read_to_string(dir.to_owned() + file).unwrap();
        for script in crate::redis::SCRIPTS {
            let file = script.name().replace(' ', "_") + ".lua";
            let original = read("prelude.lua") + &read(&file);
            let sent: Vec<&str> = script.source().lines().collect();
            let lines: Vec<&str> = original.lines().collect();
            // Line for line, so Lua's error messages name the lines of the files.
            assert_eq!(sent.len(), lines.len(), "{file}");
            for (sent, line) in sent.iter().zip(&lines) {
                if line.trim_start().starts_with("--") {
                    assert_eq!(*sent, "", "{file}: {line}");
                } else {
                    assert_eq!(*sent, line.trim_start_matches([' ', '\t']), "{file}");
                }
            }
            assert!(lines.iter().any(|line| line.starts_with("--")), "{file}");
        }
    }

    #[test]
    fn a_const_script_knows_its_sha1() {
        static SCRIPT: Script = Script::new("test", "return 1");
        assert_eq!(SCRIPT.sha1(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
        assert_eq!(SCRIPT.sha1_string(), SCRIPT.sha1());
    }
}
