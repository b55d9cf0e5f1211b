//! The store on Redis: one instance's [`StoreLink`] as two Redis
//! connections (`docs/fleets.md`, "The seam").
//!
//! | op | Redis |
//! |---|---|
//! | `Append` | a script: `XADD log MAXLEN n 0-* k v` (Redis numbers the entry: id `0-seq`), the log's TTL pushed, the log listed in the session's index; for a claimed log, the entries the trim takes that are past the claimed mark are returned (evicted untaken) |
//! | `Publish` | `PUBLISH` on the log's channel, payload `seq kind text` |
//! | `Read` | a script: the first id kept (was the cursor trimmed?) and `XRANGE log (0-after +` |
//! | `Claim` | a script: the log's claimed mark, `XRANGE log (0-mark + COUNT max+1`, the mark set |
//! | `Subscribe` / `Unsubscribe` | on the subscriber connection (RESP3: the confirmation arrives in order with the publications, as the seam says) |
//! | `PutSession` / `TouchSession` / `LoadSession` | `SET … PX` / `GETEX … PX` / `GET` |
//! | `Beat` / `Alive` | `SET hb:instance 1 PX ttl` / `EXISTS` |
//! | `Complete` | a script: unless the log's last entry is an end, `XADD` each record |
//! | `ClaimDelivery` | a script: unless the session is gone, `SET d:session:id 1 NX PX ttl` (taken if set) |
//! | `DeleteSession` | a script: `DEL` of the session, every log in its index, the index |
//!
//! The command connection sends every op waiting as one pipeline (at most
//! `PIPELINE_OPS_MAX`) and reads the replies in order, so replies come back
//! in op order, as the seam asks, with one round trip per batch. Logs live as long as the session's TTL past their last append and
//! go with the session's `DEL`; a subscription outlives the session until
//! the instance unsubscribes (the store cannot end another connection's
//! subscriptions, as `MemoryStore` does).
//!
//! A connection lost ends the link: the instance stops serving (see
//! [`mcp_streamable_hyper::fleet`]).

use mcp_streamable::fleet::{Entry, InstanceId, LogKey, Push, Record, Seq, StoreOp, StoreReply};
use mcp_streamable::ids::{SessionId, StreamId};
use mcp_streamable::shared::Shared;
use mcp_streamable_hyper::fleet::{FromStore, StoreLink};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, PushInfo, PushKind, Value};
use tokio::sync::mpsc;

/// Settings of the Redis store.
#[derive(Clone, Debug)]
pub struct RedisOptions {
    /// `redis://host:port/db` (RESP3 is asked for).
    pub url: String,
    /// The prefix of every key and channel (several fleets on one Redis).
    pub prefix: String,
    /// Entries a log keeps (`MAXLEN`): `MemoryStore`'s `entries_per_log_max`.
    pub entries_per_log_max: usize,
    /// A log is dropped this long after its last append (the session's TTL).
    pub log_ttl_ms: u64,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            url: "redis://127.0.0.1:6379".into(),
            prefix: "mcp".into(),
            entries_per_log_max: 4096,
            log_ttl_ms: 30 * 60 * 1000,
        }
    }
}

/// Connects one instance to Redis: its command and subscriber connections,
/// as a [`StoreLink`].
pub async fn connect(options: RedisOptions) -> redis::RedisResult<StoreLink> {
    let url = if options.url.contains("protocol=") {
        options.url.clone()
    } else if options.url.contains('?') {
        format!("{}&protocol=resp3", options.url)
    } else {
        format!("{}?protocol=resp3", options.url)
    };
    let client = redis::Client::open(url)?;
    let commands = client.get_multiplexed_async_connection().await?;
    let (push_tx, push_rx) = mpsc::unbounded_channel::<PushInfo>();
    let config = AsyncConnectionConfig::new().set_push_sender(push_tx);
    let subscriber = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    let (ops, mut ops_rx) = mpsc::unbounded_channel::<StoreOp>();
    let (from_tx, from) = mpsc::unbounded_channel();
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let (sub_tx, sub_rx) = mpsc::unbounded_channel();
    let keys = Keys {
        prefix: options.prefix.clone(),
    };
    let mut cmd = tokio::spawn(run_commands(
        commands,
        cmd_rx,
        from_tx.clone(),
        keys.clone(),
        options.clone(),
    ));
    let mut sub = tokio::spawn(run_subscriber(subscriber, sub_rx, push_rx, from_tx, keys));
    tokio::spawn(async move {
        let route = async {
            while let Some(op) = ops_rx.recv().await {
                let to = match op.conn() {
                    mcp_streamable::fleet::Conn::Command => cmd_tx.send(op).is_ok(),
                    mcp_streamable::fleet::Conn::Subscriber => sub_tx.send(op).is_ok(),
                };
                if !to {
                    return;
                }
            }
        };
        // Either connection ending ends the link: the other is stopped, so
        // the instance sees `from` close.
        tokio::select! {
            _ = route => {}
            _ = &mut cmd => {}
            _ = &mut sub => {}
        }
        cmd.abort();
        sub.abort();
    });
    Ok(StoreLink { ops, from })
}

/// Key and channel names.
#[derive(Clone, Debug)]
struct Keys {
    prefix: String,
}

impl Keys {
    fn session(&self, s: &SessionId) -> String {
        format!("{}:s:{s}", self.prefix)
    }
    fn index(&self, s: &SessionId) -> String {
        format!("{}:i:{s}", self.prefix)
    }
    fn log(&self, l: &LogKey) -> String {
        format!("{}:l:{}:{}", self.prefix, l.session, l.stream.0)
    }
    fn mark(&self, l: &LogKey) -> String {
        format!("{}:c:{}:{}", self.prefix, l.session, l.stream.0)
    }
    /// A broadcast's claim on its delivery to a session.
    fn delivery(&self, s: &SessionId, id: u64) -> String {
        format!("{}:d:{s}:{id:x}", self.prefix)
    }
    fn beat(&self, i: InstanceId) -> String {
        format!("{}:hb:{}", self.prefix, i.0)
    }
    fn channel(&self, l: &LogKey) -> String {
        format!("{}:p:{}:{}", self.prefix, l.session, l.stream.0)
    }
    /// The log a channel name names.
    fn log_of_channel(&self, channel: &str) -> Option<LogKey> {
        let rest = channel.strip_prefix(&self.prefix)?.strip_prefix(":p:")?;
        let (session, stream) = rest.rsplit_once(':')?;
        Some(LogKey {
            session: session.parse().ok()?,
            stream: StreamId(stream.parse().ok()?),
        })
    }
}

/// The scripts, each atomic in Redis as the store's ops are (sent with
/// `EVAL`, so a pipeline needs no script cache).
mod lua {
    /// KEYS: log, index, claimed mark; ARGV: kind, text, max, ttl, claimed
    /// (`1` for a mailbox or answers log). Returns {id, entries the trim
    /// took past the claimed mark (claimed logs only)}.
    pub const APPEND: &str = "local evicted = {}
        if ARGV[5] == '1' then
          local over = redis.call('XLEN', KEYS[1]) + 1 - tonumber(ARGV[3])
          if over > 0 then
            local mark = tonumber(redis.call('GET', KEYS[3]) or '0')
            for _, e in ipairs(redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', over)) do
              if tonumber(string.sub(e[1], 3)) > mark then evicted[#evicted + 1] = e end
            end
          end
        end
        local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], '0-*', ARGV[1], ARGV[2])
        redis.call('PEXPIRE', KEYS[1], ARGV[4])
        redis.call('SADD', KEYS[2], KEYS[1])
        redis.call('PEXPIRE', KEYS[2], ARGV[4])
        return {id, evicted}";
    /// KEYS: log; ARGV: after. Returns {trimmed, entries}.
    pub const READ: &str = "local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
        local trimmed = 0
        if #first > 0 then
          local f = tonumber(string.sub(first[1][1], 3))
          if tonumber(ARGV[1]) + 1 < f then trimmed = 1 end
        end
        return {trimmed, redis.call('XRANGE', KEYS[1], '(0-' .. ARGV[1], '+')}";
    /// KEYS: log, mark, index; ARGV: max, ttl. Returns {more, entries}.
    pub const CLAIM: &str = "local mark = redis.call('GET', KEYS[2]) or '0'
        local max = tonumber(ARGV[1])
        local entries = redis.call('XRANGE', KEYS[1], '(0-' .. mark, '+', 'COUNT', max + 1)
        local more = 0
        if #entries > max then more = 1; table.remove(entries) end
        if #entries > 0 then
          redis.call('SET', KEYS[2], string.sub(entries[#entries][1], 3), 'PX', ARGV[2])
          redis.call('SADD', KEYS[3], KEYS[2])
        end
        return {more, entries}";
    /// KEYS: log, index; ARGV: max, ttl, then kind and text of each record.
    /// Appends them unless the log's last entry is final (an end, a
    /// release); returns their ids.
    pub const COMPLETE: &str = "local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
        if #last > 0 and (last[1][2][1] == 'e' or last[1][2][1] == 'r') then return {} end
        local ids = {}
        for i = 3, #ARGV, 2 do
          ids[#ids + 1] = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '0-*', ARGV[i], ARGV[i + 1])
        end
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
        redis.call('SADD', KEYS[2], KEYS[1])
        return ids";
    /// KEYS: session (a hash: `r` its record, `a` its adoptions); ARGV:
    /// record, ttl. The record stored, the count of adoptions kept.
    pub const PUT_SESSION: &str = "redis.call('HSET', KEYS[1], 'r', ARGV[1])
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
        return 1";
    /// KEYS: session; ARGV: ttl (`0`: expiry untouched), adopt (`1`: count
    /// an adoption). Returns {record, adoption (0 when not counted)}, or nil
    /// when the session is gone.
    pub const GET_SESSION: &str = "local r = redis.call('HGET', KEYS[1], 'r')
        if not r then return false end
        if ARGV[1] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
        local n = 0
        if ARGV[2] == '1' then n = redis.call('HINCRBY', KEYS[1], 'a', 1) end
        return {r, n}";
    /// KEYS: session, the claim; ARGV: ttl. Returns 1 if the claim was
    /// taken now: the session lives and no one took it before.
    pub const CLAIM_DELIVERY: &str = "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
        if redis.call('SET', KEYS[2], 1, 'NX', 'PX', ARGV[1]) then return 1 end
        return 0";
    /// KEYS: session, index. Returns whether the session existed.
    pub const DELETE: &str = "local existed = redis.call('DEL', KEYS[1])
        local logs = redis.call('SMEMBERS', KEYS[2])
        for _, k in ipairs(logs) do redis.call('DEL', k) end
        redis.call('DEL', KEYS[2])
        return existed";
}

/// Ops taken into one pipeline at most: the command connection sends every
/// op waiting (up to this many) at once and reads the replies in order.
const PIPELINE_OPS_MAX: usize = 256;

async fn run_commands(
    mut con: MultiplexedConnection,
    mut ops: mpsc::UnboundedReceiver<StoreOp>,
    from: mpsc::UnboundedSender<FromStore>,
    keys: Keys,
    options: RedisOptions,
) {
    while let Some(first) = ops.recv().await {
        let mut pipe = redis::pipe();
        let mut decoders = Vec::new();
        let mut next = Some(first);
        while let Some(op) = next.take() {
            if let Some((cmd, decode)) = command(op, &keys, &options) {
                pipe.add_command(cmd);
                decoders.push(decode);
            }
            if decoders.len() < PIPELINE_OPS_MAX {
                next = ops.try_recv().ok();
            }
        }
        if decoders.is_empty() {
            continue;
        }
        let values: Vec<Value> = match pipe.query_async(&mut con).await {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(error = %e, "the Redis command connection failed");
                return;
            }
        };
        for (decode, value) in decoders.into_iter().zip(values) {
            match decode.reply(value) {
                Ok(Some(reply)) => {
                    if from.send(FromStore::Reply(reply)).is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(error = %e, "a Redis reply the store cannot read");
                    return;
                }
            }
        }
    }
}

/// How a command's reply becomes the op's.
enum Decode {
    Appended(LogKey),
    Read(LogKey, Seq),
    Claimed(LogKey),
    Stored(SessionId),
    Session(SessionId),
    Deleted(SessionId),
    Delivery(SessionId, u64),
    Alive(InstanceId),
    Completed(LogKey, Vec<Record>),
    /// No reply (a publication).
    Nothing,
}

impl Decode {
    fn reply(self, v: Value) -> redis::RedisResult<Option<StoreReply>> {
        let parse = |e: redis::ParsingError| redis::RedisError::from(e);
        Ok(Some(match self {
            Decode::Appended(log) => {
                type Raw = (String, Vec<RawEntry>);
                let (id, raw): Raw = redis::from_redis_value(v).map_err(parse)?;
                let seq = seq_of_id(&id).ok_or_else(|| malformed("an XADD id"))?;
                StoreReply::Appended {
                    log,
                    seq,
                    evicted: entries_of(raw)?,
                }
            }
            Decode::Read(log, after) => {
                let (trimmed, entries) = flag_and_entries(v)?;
                StoreReply::Read {
                    log,
                    after,
                    entries,
                    trimmed,
                }
            }
            Decode::Claimed(log) => {
                let (more, entries) = flag_and_entries(v)?;
                StoreReply::Claimed { log, entries, more }
            }
            Decode::Stored(session) => StoreReply::Stored { session },
            Decode::Session(session) => {
                let found: Option<(String, i64)> = redis::from_redis_value(v).map_err(parse)?;
                let adoption = found.as_ref().map_or(0, |(_, n)| *n);
                StoreReply::Session {
                    session,
                    record: found.map(|(r, _)| Shared::new(r)),
                    // A count past u32 goes on round it (slices wrap anyway).
                    adoption: adoption as u32,
                }
            }
            Decode::Delivery(session, id) => {
                let won: i64 = redis::from_redis_value(v).map_err(parse)?;
                StoreReply::Delivery {
                    session,
                    id,
                    won: won > 0,
                }
            }
            Decode::Deleted(session) => {
                let existed: i64 = redis::from_redis_value(v).map_err(parse)?;
                StoreReply::Deleted {
                    session,
                    existed: existed > 0,
                }
            }
            Decode::Alive(instance) => {
                let n: i64 = redis::from_redis_value(v).map_err(parse)?;
                StoreReply::Alive {
                    instance,
                    alive: n > 0,
                }
            }
            Decode::Completed(log, records) => {
                let ids: Vec<String> = redis::from_redis_value(v).map_err(parse)?;
                let mut appended = Vec::with_capacity(ids.len());
                for (id, record) in ids.iter().zip(records) {
                    let seq = seq_of_id(id).ok_or_else(|| malformed("an XADD id"))?;
                    appended.push(Entry { seq, record });
                }
                StoreReply::Completed { log, appended }
            }
            Decode::Nothing => return Ok(None),
        }))
    }
}

fn eval(script: &str, keys: &[String]) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script).arg(keys.len());
    for k in keys {
        cmd.arg(k);
    }
    cmd
}

/// The command for one op on the command connection, and how to read its
/// reply; `None` for the subscriber connection's ops.
fn command(op: StoreOp, keys: &Keys, options: &RedisOptions) -> Option<(redis::Cmd, Decode)> {
    let ttl = options.log_ttl_ms.max(1);
    Some(match op {
        StoreOp::Append { log, record } => {
            let (kind, text) = encode_record(&record);
            let script_keys = [keys.log(&log), keys.index(&log.session), keys.mark(&log)];
            let mut cmd = eval(lua::APPEND, &script_keys);
            cmd.arg(kind)
                .arg(text)
                .arg(options.entries_per_log_max.max(1))
                .arg(ttl)
                .arg(if log.is_claimed() { "1" } else { "0" });
            (cmd, Decode::Appended(log))
        }
        StoreOp::Publish { log, entry } => {
            let (kind, text) = encode_record(&entry.record);
            let mut cmd = redis::cmd("PUBLISH");
            cmd.arg(keys.channel(&log))
                .arg(format!("{} {kind}{text}", entry.seq));
            (cmd, Decode::Nothing)
        }
        StoreOp::Read { log, after } => {
            let mut cmd = eval(lua::READ, &[keys.log(&log)]);
            cmd.arg(after);
            (cmd, Decode::Read(log, after))
        }
        StoreOp::Claim { log, max } => {
            let mut cmd = eval(
                lua::CLAIM,
                &[keys.log(&log), keys.mark(&log), keys.index(&log.session)],
            );
            cmd.arg(max.max(1)).arg(ttl);
            (cmd, Decode::Claimed(log))
        }
        StoreOp::Subscribe { .. } | StoreOp::Unsubscribe { .. } => return None,
        StoreOp::Beat { instance, ttl_ms } => {
            let mut cmd = redis::cmd("SET");
            cmd.arg(keys.beat(instance))
                .arg(1)
                .arg("PX")
                .arg(ttl_ms.max(1));
            (cmd, Decode::Nothing)
        }
        StoreOp::Alive { instance } => {
            let mut cmd = redis::cmd("EXISTS");
            cmd.arg(keys.beat(instance));
            (cmd, Decode::Alive(instance))
        }
        StoreOp::Complete { log, records } => {
            let mut cmd = eval(lua::COMPLETE, &[keys.log(&log), keys.index(&log.session)]);
            cmd.arg(options.entries_per_log_max.max(1)).arg(ttl);
            for r in &records {
                let (kind, text) = encode_record(r);
                cmd.arg(kind).arg(text);
            }
            (cmd, Decode::Completed(log, records))
        }
        StoreOp::PutSession {
            session,
            record,
            ttl_ms,
        } => {
            let mut cmd = eval(lua::PUT_SESSION, &[keys.session(&session)]);
            cmd.arg(record.as_str()).arg(ttl_ms.max(1));
            (cmd, Decode::Stored(session))
        }
        StoreOp::TouchSession {
            session,
            ttl_ms,
            adopt,
        } => {
            let mut cmd = eval(lua::GET_SESSION, &[keys.session(&session)]);
            cmd.arg(ttl_ms.max(1)).arg(u8::from(adopt));
            (cmd, Decode::Session(session))
        }
        StoreOp::LoadSession { session, adopt } => {
            let mut cmd = eval(lua::GET_SESSION, &[keys.session(&session)]);
            cmd.arg(0).arg(u8::from(adopt));
            (cmd, Decode::Session(session))
        }
        StoreOp::ClaimDelivery {
            session,
            id,
            ttl_ms,
        } => {
            let claim = keys.delivery(&session, id);
            let mut cmd = eval(lua::CLAIM_DELIVERY, &[keys.session(&session), claim]);
            cmd.arg(ttl_ms.max(1));
            (cmd, Decode::Delivery(session, id))
        }
        StoreOp::DeleteSession { session } => {
            let cmd = eval(lua::DELETE, &[keys.session(&session), keys.index(&session)]);
            (cmd, Decode::Deleted(session))
        }
    })
}

async fn run_subscriber(
    mut con: MultiplexedConnection,
    mut ops: mpsc::UnboundedReceiver<StoreOp>,
    mut pushes: mpsc::UnboundedReceiver<PushInfo>,
    from: mpsc::UnboundedSender<FromStore>,
    keys: Keys,
) {
    loop {
        tokio::select! {
            op = ops.recv() => {
                let done = match op {
                    Some(StoreOp::Subscribe { log }) => con.subscribe(keys.channel(&log)).await,
                    Some(StoreOp::Unsubscribe { log }) => con.unsubscribe(keys.channel(&log)).await,
                    Some(_) => Ok(()),
                    None => return,
                };
                if let Err(e) = done {
                    tracing::error!(error = %e, "the Redis subscriber connection failed");
                    return;
                }
            }
            p = pushes.recv() => {
                let Some(p) = p else { return };
                match push_of(p, &keys) {
                    Ok(Some(push)) => {
                        if from.send(FromStore::Push(push)).is_err() {
                            return;
                        }
                    }
                    Ok(None) => {}
                    Err(()) => {
                        tracing::error!("the Redis subscriber connection was lost");
                        return;
                    }
                }
            }
        }
    }
}

/// What a push from Redis is to the seam; `Err` once disconnected.
fn push_of(p: PushInfo, keys: &Keys) -> Result<Option<Push>, ()> {
    let channel = |data: &[Value]| -> Option<LogKey> {
        let name: String = redis::from_redis_value_ref(data.first()?).ok()?;
        keys.log_of_channel(&name)
    };
    Ok(match p.kind {
        PushKind::Disconnection => return Err(()),
        PushKind::Subscribe => channel(&p.data).map(|log| Push::Subscribed { log }),
        PushKind::Message => {
            let log = channel(&p.data);
            let payload: Option<String> = p
                .data
                .get(1)
                .and_then(|v| redis::from_redis_value_ref(v).ok());
            match (log, payload.as_deref().and_then(decode_publication)) {
                (Some(log), Some(entry)) => Some(Push::Published { log, entry }),
                _ => None,
            }
        }
        _ => None,
    })
}

/// A record as a stream entry's field and value (and in a publication).
fn encode_record(record: &Record) -> (&'static str, &str) {
    match record {
        Record::Message(text) => ("m", text.as_str()),
        Record::Blank => ("b", ""),
        Record::Opened(ids) => ("o", ids.as_str()),
        Record::End => ("e", ""),
        Record::Released => ("r", ""),
    }
}

fn decode_record(kind: &str, text: String) -> Option<Record> {
    match kind {
        "m" => Some(Record::Message(Shared::new(text))),
        "b" => Some(Record::Blank),
        "o" => Some(Record::Opened(Shared::new(text))),
        "e" => Some(Record::End),
        "r" => Some(Record::Released),
        _ => None,
    }
}

/// `seq kind text` (kind one letter).
fn decode_publication(payload: &str) -> Option<Entry> {
    let (seq, rest) = payload.split_once(' ')?;
    let kind = rest.get(..1)?;
    Some(Entry {
        seq: seq.parse().ok()?,
        record: decode_record(kind, rest[1..].to_owned())?,
    })
}

/// The number in a stream id `0-seq`.
fn seq_of_id(id: &str) -> Option<Seq> {
    id.strip_prefix("0-")?.parse().ok()
}

/// A stream entry as Redis gives it: its id and its fields.
type RawEntry = (String, Vec<String>);

/// A script's `{flag, entries}`.
fn flag_and_entries(v: Value) -> redis::RedisResult<(bool, Vec<Entry>)> {
    type Raw = (i64, Vec<RawEntry>);
    let (flag, raw): Raw = redis::from_redis_value(v).map_err(redis::RedisError::from)?;
    Ok((flag != 0, entries_of(raw)?))
}

/// Stream entries as the log's.
fn entries_of(raw: Vec<RawEntry>) -> redis::RedisResult<Vec<Entry>> {
    let mut entries = Vec::with_capacity(raw.len());
    for (id, mut fields) in raw {
        let seq = seq_of_id(&id).ok_or_else(|| malformed("a stream id"))?;
        if fields.len() != 2 {
            return Err(malformed("a stream entry"));
        }
        let text = fields.pop().unwrap_or_default();
        let kind = fields.pop().unwrap_or_default();
        let record = decode_record(&kind, text).ok_or_else(|| malformed("a record"))?;
        entries.push(Entry { seq, record });
    }
    Ok(entries)
}

fn malformed(what: &'static str) -> redis::RedisError {
    redis::RedisError::from((redis::ErrorKind::Parse, "malformed reply", what.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publications_and_channels_round_trip() {
        let keys = Keys {
            prefix: "mcp".into(),
        };
        let log = LogKey {
            session: "abc".parse().unwrap(),
            stream: StreamId(1 << 20 | 7),
        };
        assert_eq!(keys.log_of_channel(&keys.channel(&log)), Some(log));
        assert_eq!(keys.log_of_channel("other:p:abc:1"), None);
        assert_eq!(keys.log_of_channel("mcp:p:abc"), None);
        let e = decode_publication("12 mhello world").unwrap();
        assert_eq!(e.seq, 12);
        assert_eq!(e.record, Record::Message(Shared::new("hello world".into())));
        assert_eq!(decode_publication("3 e").unwrap().record, Record::End);
        assert_eq!(decode_publication("4 r").unwrap().record, Record::Released);
        assert_eq!(decode_publication("3 x"), None);
        assert_eq!(seq_of_id("0-42"), Some(42));
        assert_eq!(seq_of_id("1-42"), None);
    }
}
