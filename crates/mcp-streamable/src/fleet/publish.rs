//! [`Publisher`]: the writer of a stream's log on the instance where the
//! stream's messages are produced.
//!
//! A record is appended first, so the store gives it its number; once the
//! store replies, the numbered entry is published to the instances that
//! follow the log. Replies on the command connection come in the order of
//! the appends, so the records waiting for their numbers are a FIFO.

use super::{Entry, LogKey, Record, StoreOp, StoreReply};
use std::collections::VecDeque;

/// Appends then publishes the records of one log (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Publisher {
    log: LogKey,
    /// Appended, waiting for their numbers.
    awaiting: VecDeque<Record>,
    ops: VecDeque<StoreOp>,
}

impl Publisher {
    /// A writer of `log`.
    pub fn new(log: LogKey) -> Self {
        Publisher {
            log,
            awaiting: VecDeque::new(),
            ops: VecDeque::new(),
        }
    }

    /// The log written.
    pub fn log(&self) -> &LogKey {
        &self.log
    }

    /// Records appended whose numbers have not come back yet.
    pub fn awaiting_len(&self) -> usize {
        self.awaiting.len()
    }

    /// Writes `record` to the log.
    pub fn append(&mut self, record: Record) {
        self.awaiting.push_back(record.clone());
        self.ops.push_back(StoreOp::Append {
            log: self.log.clone(),
            record,
        });
    }

    /// A reply on the command connection about this log.
    pub fn handle_reply(&mut self, reply: StoreReply) {
        let StoreReply::Appended { seq, .. } = reply else {
            return;
        };
        if let Some(record) = self.awaiting.pop_front() {
            self.ops.push_back(StoreOp::Publish {
                log: self.log.clone(),
                entry: Entry { seq, record },
            });
        }
    }

    /// The next op for the store.
    pub fn poll_op(&mut self) -> Option<StoreOp> {
        self.ops.pop_front()
    }
}
