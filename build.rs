//! Prepares the Lua scripts the crate sends to Redis: each `src/redis/scripts/<name>.lua` behind the
//! shared `prelude.lua`, written unchanged to `$OUT_DIR/<name>.lua`, with its SHA-1 (as EVALSHA names
//! it) in `$OUT_DIR/<name>.lua.sha1`, for `include_str!` (src/redis/layout.rs).

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
    let prelude = read(&prelude_path);
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("src/redis/scripts is readable")
        .map(|entry| entry.expect("src/redis/scripts is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "lua") && *path != prelude_path)
        .collect();
    entries.sort();
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let script = prelude.clone() + &read(&path);
        let name = path.file_name().expect("a file name").to_string_lossy();
        let sha1 = sha1_smol::Sha1::from(&script).digest().to_string();
        write(&out_dir.join(&*name), &script);
        write(&out_dir.join(format!("{name}.sha1")), &sha1);
    }
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn write(path: &Path, text: &str) {
    fs::write(path, text).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
}
