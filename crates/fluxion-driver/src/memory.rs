//! The memory budget's policy: its default, and sizes as people write them
//! (`512M`, `2G`). The accounting is in `fluxion_interp` (`CountingAlloc`).

/// Share of the available memory an evaluation may hold by default. The budget counts
/// live heap bytes only; the rest is headroom for what it does not count — allocator
/// overhead and fragmentation, the evaluation stack, a result being printed, one
/// built-in's output between two checks — and for the rest of the machine.
const DEFAULT_SHARE: u64 = 2;

/// The default memory budget in bytes: half of the memory available to this process,
/// which is the smallest of physical memory (`MemTotal` in /proc/meminfo), the
/// cgroup's memory limit (a container's, cgroup v2 or v1) and the address-space
/// limit (`ulimit -v`, less the evaluation stack's reservation). When none can be
/// read (not Linux), 4 GiB.
pub fn default_memory_limit() -> usize {
    let available = [physical_memory(), cgroup_limit(), address_space_limit()]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(8 << 30);
    usize::try_from(available / DEFAULT_SHARE).unwrap_or(usize::MAX)
}

fn physical_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The memory limit of this process's cgroup, if one is set ("max" is none).
fn cgroup_limit() -> Option<u64> {
    let read =
        |path: &str| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    // cgroup v2: the group's path is the `0::` line of /proc/self/cgroup; inside a
    // container it is usually the root of the mounted hierarchy.
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("0::")
                    .map(|p| p.trim_end_matches('/').to_string())
            })
        });
    let mut candidates = vec![];
    if let Some(p) = &own {
        candidates.push(format!("/sys/fs/cgroup{p}/memory.max"));
    }
    candidates.push("/sys/fs/cgroup/memory.max".into());
    // cgroup v1 reports "no limit" as a huge number, which `min` ignores.
    candidates.push("/sys/fs/cgroup/memory/memory.limit_in_bytes".into());
    candidates.iter().filter_map(|p| read(p)).min()
}

/// What is left of `ulimit -v` (RLIMIT_AS, from /proc/self/limits): the limit less
/// the address space this process already uses (`VmSize` in /proc/self/status: the
/// binary, its libraries, the allocator's arenas and the evaluation thread's stack,
/// which `with_big_stack` picks smaller when the limit is tight).
fn address_space_limit() -> Option<u64> {
    let soft = address_space_soft_limit()?;
    let in_use = address_space_in_use().unwrap_or(super::eval_stack_size() as u64);
    Some(soft.saturating_sub(in_use))
}

/// `ulimit -v` (RLIMIT_AS) in bytes, if one is set.
pub(crate) fn address_space_soft_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    line.trim_start_matches("Max address space")
        .split_whitespace()
        .next()?
        .parse()
        .ok() // "unlimited" does not parse: no limit
}

/// `VmSize` of this process, in bytes.
fn address_space_in_use() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Parses a size: a whole number of bytes with an optional binary unit, `K`, `M`, `G`
/// or `T` (optionally followed by `iB` or `B`, any case): `512M`, `2G`, `1048576`.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let bad = || {
        format!(
            "invalid size `{text}` (expected a number of bytes, optionally with K, M, G or T: 512M, 2G)"
        )
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    let unit = unit.trim().to_ascii_uppercase();
    let unit = unit
        .strip_suffix("IB")
        .or_else(|| unit.strip_suffix('B'))
        .unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(bad()),
    };
    let bytes = n
        .checked_mul(1 << shift)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| format!("size `{text}` is too large"))?;
    if bytes == 0 {
        return Err(format!("size `{text}` must be more than 0"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("64mb"), Ok(64 << 20));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("8k"), Ok(8 << 10));
        for bad in ["", "G", "1.5G", "-1G", "12X", "0", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_default_is_half_of_what_is_available_at_most() {
        let limit = default_memory_limit() as u64;
        assert!(limit > 0);
        if let Some(physical) = physical_memory() {
            assert!(limit <= physical / 2);
        }
    }
}
