//! Prepares the Lua scripts the crate sends to Redis. Each file of `src/redis/scripts/` is written to
//! `$OUT_DIR/scripts/` as it is sent: without its comment lines and indentation (they are for readers,
//! and would cost every EVAL and the package bytes), for `include_str!` (src/redis/layout.rs,
//! src/redis/protected.rs). Each script, `fast/<name>.lua` when there is one (a common request decided
//! before the prelude defines anything), the prelude, then `<name>.lua`, gets its SHA-1 (as EVALSHA
//! names it) in `$OUT_DIR/<name>.lua.sha1`. The algorithms' scripts also get the SHA-1 of their guarded
//! variant, `$OUT_DIR/<name>.guarded.lua.sha1`: `guard/head.lua`, the prelude, the script's body as a
//! function `decide`, then `guard/tail.lua`, which src/redis/protected.rs joins from the same files.
//! The set script, `$OUT_DIR/set.lua.sha1`, decides several limits in one call: `set/head.lua`, the
//! prelude, each of those bodies as a function named after its file, then `set/tail.lua`
//! (src/redis/set.rs joins it alike).

use std::fs;
use std::path::Path;

fn main() {
    let dir = Path::new("src/redis/scripts");
    let out_dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    let out_dir = Path::new(&out_dir);
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", dir.display());
    let prelude_path = dir.join("prelude.lua");
    println!("cargo:rerun-if-changed={}", prelude_path.display());
    let sent = out_dir.join("scripts");
    fs::create_dir_all(sent.join("guard")).expect("OUT_DIR is writable");
    fs::create_dir_all(sent.join("fast")).expect("OUT_DIR is writable");
    fs::create_dir_all(sent.join("set")).expect("OUT_DIR is writable");
    let prelude = as_sent(&prelude_path, &sent.join("prelude.lua"));
    let head = as_sent(
        &watched(&dir.join("guard/head.lua")),
        &sent.join("guard/head.lua"),
    );
    let tail = as_sent(
        &watched(&dir.join("guard/tail.lua")),
        &sent.join("guard/tail.lua"),
    );
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("src/redis/scripts is readable")
        .map(|entry| entry.expect("src/redis/scripts is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "lua") && *path != prelude_path)
        .collect();
    entries.sort();
    let mut set = as_sent(
        &watched(&dir.join("set/head.lua")),
        &sent.join("set/head.lua"),
    ) + &prelude;
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_stem().expect("a file name").to_string_lossy();
        let body = as_sent(&path, &sent.join(format!("{name}.lua")));
        let fast_path = dir.join(format!("fast/{name}.lua"));
        let fast = if fast_path.exists() {
            as_sent(&watched(&fast_path), &sent.join(format!("fast/{name}.lua")))
        } else {
            String::new()
        };
        let script = fast + &prelude + &body;
        write(&out_dir.join(format!("{name}.lua.sha1")), &sha1(&script));
        if GUARDED.contains(&&*name) {
            let guarded = format!("{head}{prelude}local function decide()\n{body}\nend\n{tail}");
            write(
                &out_dir.join(format!("{name}.guarded.lua.sha1")),
                &sha1(&guarded),
            );
            set += &format!("local function {name}()\n{body}\nend\n");
        }
    }
    set += &as_sent(
        &watched(&dir.join("set/tail.lua")),
        &sent.join("set/tail.lua"),
    );
    write(&out_dir.join("set.lua.sha1"), &sha1(&set));
}

/// The scripts that have a guarded variant: the algorithms'.
const GUARDED: [&str; 4] = ["fixed_window", "sliding_window", "token_bucket", "gcra"];

/// The hex SHA-1 of `script`, as EVALSHA names it.
fn sha1(script: &str) -> String {
    sha1_smol::Sha1::from(script).digest().to_string()
}

/// `path`, which cargo now watches for changes.
fn watched(path: &Path) -> std::path::PathBuf {
    println!("cargo:rerun-if-changed={}", path.display());
    path.to_owned()
}

/// The script at `path` as it is sent, also written to `to`: each line without its indentation, and
/// without the lines that are only a comment or empty. Long brackets (`[[ ]]`, `--[[ ]]`) would span
/// lines, so a script may not use them.
fn as_sent(path: &Path, to: &Path) -> String {
    let source = read(path);
    assert!(
        !source.contains("[[") && !source.contains("[="),
        "{}: long brackets are not allowed in scripts (build.rs strips comments line by line)",
        path.display()
    );
    let sent: String = source
        .lines()
        .map(str::trim_start)
        .filter(|line| !line.is_empty() && !line.starts_with("--"))
        .flat_map(|line| [line, "\n"])
        .collect();
    write(to, &sent);
    sent
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn write(path: &Path, text: &str) {
    fs::write(path, text).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
}
