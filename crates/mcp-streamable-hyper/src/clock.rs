//! The shells' clock: core time is milliseconds since the shell started, on
//! tokio's clock (so tests can pause it and turmoil can simulate it).

use mcp_streamable::time::Instant;

/// Core time now, for a shell that started at `start`.
pub fn now(start: tokio::time::Instant) -> Instant {
    Instant::from_millis(start.elapsed().as_millis() as u64)
}

/// Sleeps until core time `at` (forever when there is no deadline).
pub async fn sleep_until(start: tokio::time::Instant, at: Option<Instant>) {
    match at {
        Some(at) => {
            tokio::time::sleep_until(start + std::time::Duration::from_millis(at.as_millis())).await
        }
        None => std::future::pending().await,
    }
}
