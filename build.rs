//! Prepares the Lua scripts the crate sends to Redis: each `src/algorithm/<name>.lua` behind the shared
//! `prelude.lua`, written to `$OUT_DIR/<name>.lua` for `include_str!` (src/redis/layout.rs).
//!
//! Comment lines are blanked, not removed, and indentation is stripped: the scripts travel in every
//! EVAL and ship in the WebAssembly package (0.75 KB less gzipped), while line numbers in Lua's error
//! messages stay those of the files. A file with long brackets (`[[`, `--[[`, `[=`) or a line ending in
//! a backslash (a string continued on the next line) is left whole, since a line there may sit inside
//! a string or comment.

use std::fs;
use std::path::Path;

fn main() {
    let dir = Path::new("src/algorithm");
    let out_dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", dir.display());
    let prelude_path = dir.join("prelude.lua");
    println!("cargo:rerun-if-changed={}", prelude_path.display());
    let prelude = blank_comment_lines(&read(&prelude_path));
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("src/algorithm is readable")
        .map(|entry| entry.expect("src/algorithm is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "lua") && *path != prelude_path)
        .collect();
    entries.sort();
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let script = prelude.clone() + &blank_comment_lines(&read(&path));
        let name = path.file_name().expect("a file name");
        fs::write(Path::new(&out_dir).join(name), script).expect("OUT_DIR is writable");
    }
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// `source` with every line that is only a `--` comment made empty and the indentation of the others
/// removed; unchanged if it has long brackets or a line continued inside a string.
fn blank_comment_lines(source: &str) -> String {
    if source.contains("[[") || source.contains("[=") || source.contains("\\\n") {
        return source.to_owned();
    }
    source
        .split_inclusive('\n')
        .map(|line| {
            if line.trim_start().starts_with("--") {
                if line.ends_with('\n') {
                    "\n"
                } else {
                    ""
                }
            } else {
                line.trim_start_matches([' ', '\t'])
            }
        })
        .collect()
}
