//! The `mcp-streamable` command line.
fn main() {}
