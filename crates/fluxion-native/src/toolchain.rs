//! The system C compiler: compiles a translation unit to a shared library in the
//! cache (keyed by a hash of the source, the compiler and its flags), so a second run
//! of an unchanged program does not compile again.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How to invoke the C compiler.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// The compiler (`$CC`, else `cc`).
    pub cc: String,
    /// Whether to add `-march=native` (off for a library meant for another machine).
    pub native_arch: bool,
    /// Where compiled libraries are kept.
    pub cache_dir: PathBuf,
    /// The optimisation level (`-O3` by default; tests compile many small programs at
    /// `-O1`, which gives the same results: no flag here changes floating point).
    pub opt_level: u8,
    /// More flags (the sanitizer tests add `-fsanitize=…`).
    pub extra_flags: Vec<String>,
}

impl Default for Toolchain {
    fn default() -> Toolchain {
        Toolchain {
            cc: std::env::var("CC")
                .ok()
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| "cc".into()),
            native_arch: std::env::var_os("FLUXION_NATIVE_PORTABLE").is_none(),
            cache_dir: default_cache_dir(),
            opt_level: 3,
            extra_flags: Vec::new(),
        }
    }
}

/// `$FLUXION_CACHE_DIR`, else `$XDG_CACHE_HOME/fluxion`, else `~/.cache/fluxion`, else
/// the temporary directory's `fluxion-cache`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FLUXION_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("fluxion");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache").join("fluxion");
    }
    std::env::temp_dir().join("fluxion-cache")
}

/// A compiled library: where it is, and whether this call compiled it.
pub struct Built {
    pub path: PathBuf,
    /// Time spent in the C compiler (zero when the cache had it).
    pub compile_time: Duration,
    pub cached: bool,
}

impl Toolchain {
    /// The compiler's flags. `-ffp-contract=off`: no fused multiply-adds, so that
    /// results are bit-identical with the interpreter's; `-fno-optimize-sibling-calls`:
    /// every call keeps its frame, so deep recursion ends in the stack check.
    pub fn flags(&self) -> Vec<String> {
        let mut f: Vec<String> = [
            "-std=gnu11",
            "-ffp-contract=off",
            "-fno-math-errno",
            // No tail calls turned into jumps: a runaway recursion must reach the stack
            // check and stop with the interpreter's error, not loop forever.
            "-fno-optimize-sibling-calls",
            // The C library's functions that are not exactly rounded are not folded
            // by the compiler for constant arguments (it computes them correctly
            // rounded, with MPFR, where the library is at times an ulp off) but called
            // at run time, as the interpreter calls them (Rust's `f64` methods and
            // `fluxion_interp::cmath`): the same bits on both backends. `sqrt`,
            // `floor`, `ceil` and `fmod` are exact, so folding them changes nothing.
            "-fno-builtin-lgamma_r",
            "-fno-builtin-lgamma",
            "-fno-builtin-erf",
            "-fno-builtin-sin",
            "-fno-builtin-cos",
            "-fno-builtin-tan",
            "-fno-builtin-asin",
            "-fno-builtin-acos",
            "-fno-builtin-atan",
            "-fno-builtin-atan2",
            "-fno-builtin-sinh",
            "-fno-builtin-cosh",
            "-fno-builtin-tanh",
            "-fno-builtin-exp",
            "-fno-builtin-expm1",
            "-fno-builtin-log",
            "-fno-builtin-log1p",
            "-fno-builtin-pow",
            "-fPIC",
            "-shared",
            "-w",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        f.push(format!("-O{}", self.opt_level));
        // Loops start on a cache line: a tape sweep's inner loop otherwise ran 8% slower or
        // faster as unrelated runtime code moved it (llsq's gradient, the same C).
        f.push("-falign-loops=64".into());
        if self.native_arch {
            f.push("-march=native".into());
            // GCC 12.2 builds some constant vectors wrongly with AVX-512 at -O2 and
            // above: a tuple `((1, 1), (0, 0))` built from constants was passed as
            // four 1s (nested `diff` under dual numbers gave 2 for 1; reduced to twenty
            // lines of plain C, right with `-mavx2`, wrong with `-mavx512f`). AVX2 is
            // kept.
            f.push("-mno-avx512f".into());
            // The same reduction is wrong with AVX2 alone when GCC tunes for Ice Lake
            // or later (`-march=native` on a Sapphire Rapids machine): the culprit is
            // the basic-block (SLP) vectoriser, off here; loops still vectorise.
            f.push("-fno-tree-slp-vectorize".into());
        }
        f.extend(self.extra_flags.iter().cloned());
        f
    }

    /// Whether the compiler can be run.
    pub fn available(&self) -> bool {
        Command::new(&self.cc)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Compiles `source` (or finds it in the cache).
    pub fn build(&self, source: &str) -> Result<Built, String> {
        let flags = self.flags();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        source.hash(&mut h);
        self.cc.hash(&mut h);
        flags.hash(&mut h);
        let key = format!("fx-{:016x}", h.finish());
        let lib = self.cache_dir.join(format!("{key}.so"));
        if is_whole_library(&lib) {
            return Ok(Built {
                path: lib,
                compile_time: Duration::ZERO,
                cached: true,
            });
        }
        std::fs::create_dir_all(&self.cache_dir)
            .map_err(|e| format!("cannot create the cache {}: {e}", self.cache_dir.display()))?;
        // The source and the library are written under names of this process's, then
        // renamed: another process building the same library at once never compiles
        // half a source (which once made a library without `fx_entry`) nor loads half
        // a library.
        let own = format!(
            "{key}.{}.{:?}",
            std::process::id(),
            std::thread::current().id()
        )
        .replace(['(', ')'], "");
        let c_file = self.cache_dir.join(format!("{key}.c"));
        let c_tmp = self.cache_dir.join(format!("{own}.c"));
        std::fs::write(&c_tmp, source)
            .map_err(|e| format!("cannot write {}: {e}", c_tmp.display()))?;
        let tmp = self.cache_dir.join(format!("{own}.tmp"));
        let start = Instant::now();
        let out = Command::new(&self.cc)
            .args(&flags)
            .arg("-o")
            .arg(&tmp)
            .arg(&c_tmp)
            .arg("-lm")
            .output();
        let compile_time = start.elapsed();
        // Kept beside the library, for reading.
        rename(&c_tmp, &c_file)?;
        let out = out.map_err(|e| format!("cannot run the C compiler `{}`: {e}", self.cc))?;
        if !out.status.success() {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!(
                "the C compiler failed on {}:\n{}",
                c_file.display(),
                first_lines(&String::from_utf8_lossy(&out.stderr), 20)
            ));
        }
        rename(&tmp, &lib)?;
        Ok(Built {
            path: lib,
            compile_time,
            cached: false,
        })
    }
}

/// Whether `path` holds a whole library: present, and, for an ELF file, as long as its
/// header says (the section headers end the file). A library cut short (a full disk, a
/// copy interrupted) would be mapped and fault when touched, so it is built again.
fn is_whole_library(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return false;
    };
    // The header only (the whole library is read by the loader, not here).
    let mut header = [0u8; 64];
    let read = file.read(&mut header).unwrap_or(0);
    let header = &header[..read];
    if !header.starts_with(b"\x7fELF") {
        // Another system's format: trusted if not empty.
        return len > 0;
    }
    if read < 64 {
        return false;
    }
    // ELF64, little-endian: e_shoff at 0x28, e_shentsize at 0x3A, e_shnum at 0x3C.
    if header[4] != 2 || header[5] != 1 {
        return true;
    }
    let u64_at = |i: usize| u64::from_le_bytes(header[i..i + 8].try_into().unwrap_or([0; 8]));
    let u16_at = |i: usize| u64::from(u16::from_le_bytes([header[i], header[i + 1]]));
    let end = u64_at(0x28).saturating_add(u16_at(0x3A).saturating_mul(u16_at(0x3C)));
    end == len
}

fn rename(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::rename(from, to)
        .map_err(|e| format!("cannot move {} into the cache: {e}", from.display()))
}

fn first_lines(s: &str, n: usize) -> String {
    s.lines().take(n).collect::<Vec<_>>().join("\n")
}
