//! The subcommands.

pub mod call;
pub mod check;
pub mod explore;
pub mod probe;
pub mod probe_client;
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

#[cfg(test)]
mod tests {
    use super::at_least_one;

    #[test]
    fn at_least_one_refuses_zero_and_what_is_not_a_number() {
        assert_eq!(at_least_one::<usize>("1"), Ok(1));
        assert_eq!(at_least_one::<u64>("30000"), Ok(30_000));
        assert_eq!(at_least_one::<usize>("0"), Err("must be at least 1".into()));
        assert!(at_least_one::<u64>("-1").is_err());
        assert!(at_least_one::<u64>("x")
            .unwrap_err()
            .contains("not a whole number"));
    }
}
