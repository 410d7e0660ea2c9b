//! The corpus of test programs (`tests/corpus/<dir>/*.flx`), read by every suite and
//! oracle runner that takes programs: a new program is a new file. A file names its
//! point in a `// x: [..]` header line.

use std::path::{Path, PathBuf};

/// The `.flx` files of `tests/corpus/<dir>`, in name order.
pub fn files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "flx"))
        .collect();
    files.sort();
    files
}

/// The point in `src`'s `// x: [..]` header line, if it has one.
pub fn point_of(src: &str) -> Option<Vec<f64>> {
    src.lines()
        .find_map(|l| l.strip_prefix("// x:"))
        .map(|l| fluxion_driver::gradcheck::parse_reals(l.trim()))
}

/// The programs of `tests/corpus/<dir>` as (name, source, point), each of which must
/// name its point.
pub fn corpus(dir: &str) -> Vec<(String, String, Vec<f64>)> {
    files(dir)
        .into_iter()
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let src = std::fs::read_to_string(&path).unwrap();
            let x = point_of(&src).unwrap_or_else(|| panic!("{name}: no `// x:` line"));
            (name, src, x)
        })
        .collect()
}
