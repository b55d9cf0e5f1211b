//! The subcommands.

pub mod call;
pub mod check;
pub mod explore;
pub mod probe;
pub mod replay;
pub mod serve;
pub mod serve_fleet;

/// A count or a time for which 0 makes no sense (a server that serves
/// nobody: no session admitted, every connection closed at once; a check
/// on no thread or stopped before its first state): refused when parsed.
pub(crate) fn at_least_one<T: std::str::FromStr + PartialOrd + From<u8>>(
    s: &str,
) -> Result<T, String> {
    match s.parse::<T>() {
        Ok(n) if n >= T::from(1) => Ok(n),
        Ok(_) => Err("must be at least 1".into()),
        Err(_) => Err(format!("{s:?} is not a whole number")),
    }
}
