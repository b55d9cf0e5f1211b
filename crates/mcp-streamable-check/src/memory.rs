//! How much memory the checker holds, and how much it may: read from
//! `/proc` (Linux). Elsewhere both are unknown and only `--max-states` bounds
//! a run.

/// Resident set size of this process, in bytes.
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    kib_field(&status, "VmRSS:").map(|k| k * 1024)
}

/// The default memory budget: 60% of what this process could hold now,
/// what the machine has available plus what the process already holds (at
/// most 60% of the machine's total), so that a run stops cleanly long
/// before the kernel's OOM killer would end it without a word.
///
/// The budget is compared with the process's resident size, so memory the
/// process already holds counts on both sides: read from what is available
/// alone, a process that kept memory from earlier runs (an allocator that
/// has not given it back, or other searches of the same process, as a test
/// binary runs them) would get a budget smaller for every byte it holds,
/// and a run would turn depth first, or stop, at once, for a reason that is
/// not its own.
pub fn default_budget_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let total = kib_field(&info, "MemTotal:")? * 1024;
    let available = kib_field(&info, "MemAvailable:").map_or(total, |k| k * 1024);
    let reachable = available.saturating_add(rss_bytes().unwrap_or(0));
    Some(reachable.min(total) / 10 * 6)
}

/// Parses a size such as `8G`, `512M`, `300000K` or a plain number of bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?}: expected a size such as 8G, 512M or 1048576"))?;
    let scale: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        other => {
            return Err(format!(
                "{text:?}: unknown unit {other:?} (use K, M, G or T)"
            ))
        }
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("{text:?}: too large"))
}

fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("8G"), Ok(8 << 30));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("3 KiB"), Ok(3 << 10));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5X").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn fields_are_read_in_kib() {
        let text = "Name:\tx\nVmRSS:\t  2048 kB\n";
        assert_eq!(kib_field(text, "VmRSS:"), Some(2048));
        assert_eq!(kib_field(text, "VmHWM:"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_size_and_a_budget() {
        let rss = rss_bytes().expect("linux has /proc/self/status");
        assert!(rss > 1 << 20, "{rss}");
        let budget = default_budget_bytes().expect("linux has /proc/meminfo");
        assert!(budget > rss, "{budget} vs {rss}");
        // What the process holds counts as within its reach: holding more
        // does not shrink the budget by as much.
        let held: Vec<u8> = vec![1; 512 << 20];
        let after = default_budget_bytes().expect("linux has /proc/meminfo");
        assert!(
            after + (128 << 20) >= budget,
            "512 MiB held took {} MiB off the budget",
            budget.saturating_sub(after) >> 20
        );
        drop(held);
    }
}
