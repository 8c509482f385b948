//! [`RedisRooms`]: the waiting-room contract in Redis, shared by every
//! `bookingd` instance that connects with the same key prefix.
//!
//! # Atomicity
//!
//! Every state-changing call is one Lua script run by Redis as a unit: no
//! other command runs between its reads and its writes, so instances joining
//! and admitting at once never lose or duplicate a place and never pass
//! `target_active_sessions` together. A script checks everything it reads
//! before its first write (Redis does not roll back a script that fails
//! halfway), so a malformed room answers [`RoomError::Unavailable`] and
//! changes nothing. Two calls take two steps, each write still one
//! conditional script:
//! - the lottery draw needs SHA-256, which Redis' Lua lacks. The call that
//!   finds a lottery open and undrawn (a new user's join, or an admission,
//!   with `now_ms >= opens_at_ms`: where [`MemRooms`](super::MemRooms) draws)
//!   changes nothing but a `drawing` mark and answers "needs draw". From that
//!   mark on, the pre-draw list is closed: every join, admission, place or
//!   lottery call on the room (whatever its `now_ms`) answers "needs draw"
//!   too, so the draw takes effect, for every observer, at the mark. On that
//!   answer Rust reads the pre-draw joiners (arrival order), orders them with
//!   [`lottery_order`], and a `draw` script places them and marks the room
//!   drawn, only if it is still undrawn and the list still has the length
//!   read (it only grows, so an equal length is an equal list; otherwise Rust
//!   reads again, at most 8 times); then the call runs again (at most 8
//!   times, else `Unavailable`). Several instances may draw at once: the
//!   first `draw` script places the joiners, the others find the room drawn.
//!   An instance that stops after the mark leaves the draw to the next call.
//! - [`Rooms::end_session`]: session ids are SHA-256 derived
//!   ([`Session::new`]), so Rust reads the user's session, checks the id, and
//!   the `end` script ends it only if it is still open and admitted at the
//!   time read (a user is admitted once, so that names the same session).
//!
//! # Restarts and eviction
//!
//! The rooms' live state is in Redis. With persistence off, a Redis restart
//! loses them: every call on a lost room answers [`RoomError::NoRoom`]
//! ([`Rooms::spec`] answers `None`, [`Rooms::events`] leaves it out), so a
//! caller that knows the event had a room (the service asks PostgreSQL's
//! record) sees the loss and rebuilds it with [`Rooms::restore`] (one
//! script, only while the room is absent). With AOF and
//! `appendfsync always`, Redis writes each script's effects as one
//! transaction and syncs it before answering, so nothing acknowledged is
//! lost, reordered or half-applied by a restart. A call cut off by a failure
//! answers `Unavailable` and may or may not have taken effect. Not covered:
//! failover to an asynchronous replica (it may lack the last acknowledged
//! scripts; no `WAIT` is used) and key eviction (run Redis with
//! `maxmemory-policy noeviction` or without `maxmemory`: an evicted key would
//! corrupt a room).
//!
//! # Keys
//!
//! Per event `{prefix}:room:{event}:{part}` (the part never holds a `:`, so
//! keys of different events never meet): `meta` (hash: spec, seed,
//! commitment, drawn, sold-out flag, rate, arrival counter, lease),
//! `waiting` (sorted set scored `tier * 2^40 + arrival`; rank + 1 is the
//! position), `pre_draw` (list: lottery joiners before the draw, arrival
//! order), `joined` (hash: everyone who ever joined, their tier), `sessions`
//! (hash: user to `position|admitted_at|expires_at|end`), `open` (sorted set
//! of open sessions by expiry). `{prefix}:rooms` is the set of events.
//!
//! # Range
//!
//! Lua numbers and sorted-set scores are doubles, exact up to 2^53: every
//! time and duration given (`now_ms`, `opens_at_ms`, `session_ttl_ms`,
//! `lease_ms`) must lie within ±2^50 ms (±35,000 years), so their sums stay
//! exact. [`Rooms::open`] refuses a spec outside with [`RoomError::BadSpec`];
//! other calls answer `Unavailable` without touching Redis.

use super::{
    Admitted, Gauge, LotteryRecord, MAX_ROOMS, Place, Policy, RoomError, RoomImage, RoomSpec, Rooms, Session,
    SessionEnd,
};
use crate::admission::queue::{MAX_QUEUE_USERS, MAX_TIERS, QueueError, lottery_order};
use crate::model::{EventId, OrderId, SessionId, UserId};
use async_trait::async_trait;
use redis::{Script, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// Times and durations a call may carry, in absolute value (see the module's "Range").
const MS_LIMIT: i64 = 1 << 50;
/// How often a call runs again after drawing a due lottery.
const MAX_DRAW_ROUNDS: usize = 8;
/// How often the draw reads the joiners again when others joined meanwhile.
const MAX_DRAW_TRIES: usize = 8;

/// Shared by every script: the room's keys (in [`RedisRooms::keys`]' order)
/// and helpers. A script reads and validates before it writes.
const PRELUDE: &str = r#"
local META, WAITING, PRE_DRAW, JOINED, SESSIONS, OPEN, EVENTS =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local function fmt(x) return string.format('%d', x) end
local function exists() return redis.call('EXISTS', META) == 1 end
local function flag(field) return redis.call('HGET', META, field) == '1' end
local function num(field) return tonumber(redis.call('HGET', META, field) or '') end
local function parse_session(s)
  if not s then return nil end
  local pos, at, exp, ended = string.match(s, '^(%d+)|(%-?%d+)|(%-?%d+)|([%w:%-]*)$')
  if not pos then return nil end
  return { pos = pos, at = at, exp = exp, ended = ended }
end
local function waiting()
  local w = redis.call('ZCARD', WAITING)
  if not flag('drawn') then w = w + redis.call('LLEN', PRE_DRAW) end
  return w
end
local function place(user)
  local s = redis.call('HGET', SESSIONS, user)
  if s then return { 'admitted', s } end
  local sold = flag('sold_out')
  if redis.call('HEXISTS', JOINED, user) == 0 or sold then
    if sold then return { 'sold_out' } end
    return { 'not_joined' }
  end
  local rank = redis.call('ZRANK', WAITING, user)
  if rank then return { 'waiting', rank + 1 } end
  return { 'awaiting_draw' }
end
-- The draw is due (a call found the lottery open and undrawn) but not yet done.
local function drawing() return flag('drawing') and not flag('drawn') end
local function needs_draw()
  redis.call('HSET', META, 'drawing', '1')
  return { 'err', 'needs_draw' }
end
"#;

/// ARGV: spec string, policy, opens, target, ttl, seed hex, commitment, event, max rooms.
const OPEN: &str = r#"
if exists() then
  if redis.call('HGET', META, 'spec') == ARGV[1] and redis.call('HGET', META, 'seed') == ARGV[6] then
    return { 'ok' }
  end
  return { 'err', 'conflict' }
end
if redis.call('SCARD', EVENTS) >= tonumber(ARGV[9]) then return { 'err', 'too_many_rooms' } end
redis.call('HSET', META, 'spec', ARGV[1], 'policy', ARGV[2], 'opens', ARGV[3], 'target', ARGV[4],
  'ttl', ARGV[5], 'seed', ARGV[6], 'commitment', ARGV[7], 'drawn', '0', 'sold_out', '0', 'rate', '0', 'seq', '0')
redis.call('SADD', EVENTS, ARGV[8])
return { 'ok' }
"#;

/// ARGV: user, tier, now, max tiers, max queue users.
const JOIN: &str = r#"
if not exists() then return { 'err', 'no_room' } end
if drawing() then return needs_draw() end
local user, tier, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local stored = redis.call('HGET', SESSIONS, user)
local over = false
if stored then
  local s = parse_session(stored)
  if s == nil then return { 'err', 'corrupt', 'session' } end
  -- A session that ended (purchase or expiry) makes a new join a new arrival.
  over = s.ended ~= '' or tonumber(s.exp) <= now
  if not over then return { 'ok', place(user) } end
elseif redis.call('HEXISTS', JOINED, user) == 1 then
  return { 'ok', place(user) }
end
if flag('sold_out') then return { 'err', 'sold_out' } end
local policy = redis.call('HGET', META, 'policy')
if (tier ~= 0 and policy ~= 'priority') or tier >= tonumber(ARGV[4]) then return { 'err', 'bad_tier' } end
-- Counted as the in-memory queue counts: its entries plus its pre-draw list,
-- which it keeps after the draw (for the lottery's record).
local count = redis.call('HLEN', JOINED)
if flag('drawn') then count = count + redis.call('LLEN', PRE_DRAW) end
if count >= tonumber(ARGV[5]) and not over then return { 'err', 'full' } end
if over then
  redis.call('HDEL', SESSIONS, user)
  redis.call('ZREM', OPEN, user)
end
if policy == 'lottery' and not flag('drawn') then
  local opens = num('opens')
  if opens == nil then return { 'err', 'corrupt', 'opens' } end
  if now >= opens then return needs_draw() end
  redis.call('RPUSH', PRE_DRAW, user)
  redis.call('HSET', JOINED, user, '0')
else
  if policy == 'lottery' then tier = 1 end
  local seq = redis.call('HINCRBY', META, 'seq', 1)
  redis.call('ZADD', WAITING, fmt(tier * 1099511627776 + seq), user)
  redis.call('HSET', JOINED, user, fmt(tier))
end
return { 'ok', place(user) }
"#;

/// The lottery's state for the draw. No ARGV.
const SNAPSHOT: &str = r#"
if not exists() then return { 'err', 'no_room' } end
if redis.call('HGET', META, 'policy') ~= 'lottery' then return { 'err', 'not_lottery' } end
local drawn = '0'
if flag('drawn') then drawn = '1' end
return { 'ok', drawn, redis.call('HGET', META, 'seed') or '', redis.call('LRANGE', PRE_DRAW, 0, -1) }
"#;

/// ARGV: pre-draw count read, then the joiners in the drawn order.
const DRAW: &str = r#"
if not exists() then return { 'err', 'no_room' } end
if redis.call('HGET', META, 'policy') ~= 'lottery' then return { 'err', 'not_lottery' } end
if flag('drawn') then return { 'ok' } end
if not flag('drawing') then return { 'err', 'not_due' } end
local n = tonumber(ARGV[1])
if redis.call('LLEN', PRE_DRAW) ~= n or #ARGV ~= n + 1 then return { 'err', 'stale' } end
redis.call('HSET', META, 'drawn', '1')
local i = 1
while i <= n do
  local args = {}
  local j = i
  while j <= n and j < i + 500 do
    args[#args + 1] = fmt(j)
    args[#args + 1] = ARGV[j + 1]
    j = j + 1
  end
  redis.call('ZADD', WAITING, unpack(args))
  i = j
end
return { 'ok' }
"#;

/// ARGV: n, rate (text), now.
const ADMIT: &str = r#"
if not exists() then return { 'err', 'no_room' } end
local n, now = tonumber(ARGV[1]), tonumber(ARGV[3])
local opens, target, ttl = num('opens'), num('target'), num('ttl')
if opens == nil or target == nil or ttl == nil then return { 'err', 'corrupt', 'spec' } end
if drawing() or (redis.call('HGET', META, 'policy') == 'lottery' and not flag('drawn') and now >= opens) then
  return needs_draw()
end
local due = redis.call('ZRANGEBYSCORE', OPEN, '-inf', ARGV[3])
local ending = {}
for _, user in ipairs(due) do
  local s = parse_session(redis.call('HGET', SESSIONS, user))
  if s == nil or s.ended ~= '' then return { 'err', 'corrupt', 'open session' } end
  ending[#ending + 1] = { user, s }
end
local expired = {}
for _, e in ipairs(ending) do
  local user, s = e[1], e[2]
  redis.call('HSET', SESSIONS, user, s.pos .. '|' .. s.at .. '|' .. s.exp .. '|e')
  redis.call('ZREM', OPEN, user)
  local d = now - tonumber(s.at)
  if d < 0 then d = 0 end
  expired[#expired + 1] = fmt(d)
end
redis.call('HSET', META, 'rate', ARGV[2])
local k = target - redis.call('ZCARD', OPEN)
if n < k then k = n end
local admitted = {}
if not flag('sold_out') and k > 0 and now >= opens then
  local exp = fmt(now + ttl)
  local popped = redis.call('ZPOPMIN', WAITING, fmt(k))
  for i = 1, #popped, 2 do
    local user = popped[i]
    redis.call('HSET', SESSIONS, user, fmt((i + 1) / 2) .. '|' .. ARGV[3] .. '|' .. exp .. '|')
    redis.call('ZADD', OPEN, exp, user)
    admitted[#admitted + 1] = user
  end
end
return { 'ok', admitted, expired, redis.call('ZCARD', OPEN), waiting(), fmt(ttl) }
"#;

/// ARGV: user.
const PLACE: &str = r#"
if not exists() then return { 'err', 'no_room' } end
if drawing() then return needs_draw() end
local sold = '0'
if flag('sold_out') then sold = '1' end
return { 'ok', place(ARGV[1]), waiting(), redis.call('ZCARD', OPEN), redis.call('HGET', META, 'rate') or '', sold }
"#;

/// ARGV: user.
const SESSION: &str = r#"
if not exists() then return { 'err', 'no_room' } end
return { 'ok', redis.call('HGET', SESSIONS, ARGV[1]) }
"#;

/// ARGV: user, admitted_at read, end code, now.
const END: &str = r#"
if not exists() then return { 'err', 'no_room' } end
local user = ARGV[1]
local s = parse_session(redis.call('HGET', SESSIONS, user))
if s == nil or s.at ~= ARGV[2] or s.ended ~= '' then return { 'ok' } end
redis.call('HSET', SESSIONS, user, s.pos .. '|' .. s.at .. '|' .. s.exp .. '|' .. ARGV[3])
redis.call('ZREM', OPEN, user)
local d = tonumber(ARGV[4]) - tonumber(s.at)
if d < 0 then d = 0 end
return { 'ok', fmt(d) }
"#;

/// ARGV: user, admitted_at read, the end code of the purchase to undo, now.
const REOPEN: &str = r#"
if not exists() then return { 'err', 'no_room' } end
local user = ARGV[1]
local s = parse_session(redis.call('HGET', SESSIONS, user))
if s == nil or s.at ~= ARGV[2] or s.ended ~= ARGV[3] or tonumber(s.exp) <= tonumber(ARGV[4]) then
  return { 'ok', '0' }
end
redis.call('HSET', SESSIONS, user, s.pos .. '|' .. s.at .. '|' .. s.exp .. '|')
redis.call('ZADD', OPEN, s.exp, user)
return { 'ok', '1' }
"#;

/// ARGV: OPEN's nine, then drawn, sold-out flag, the counts of pre-draw
/// joiners, sessions and waiting users, then the pre-draw joiners; per
/// session user, tier, stored session, open flag; per waiting user, tier, score.
const RESTORE: &str = r#"
if exists() then return { 'ok', '0' } end
if redis.call('SCARD', EVENTS) >= tonumber(ARGV[9]) then return { 'err', 'too_many_rooms' } end
local n_pre, n_sess, n_wait = tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14])
if #ARGV ~= 14 + n_pre + 4 * n_sess + 3 * n_wait then return { 'err', 'corrupt', 'restore arguments' } end
redis.call('HSET', META, 'spec', ARGV[1], 'policy', ARGV[2], 'opens', ARGV[3], 'target', ARGV[4],
  'ttl', ARGV[5], 'seed', ARGV[6], 'commitment', ARGV[7], 'drawn', ARGV[10], 'sold_out', ARGV[11],
  'rate', '0', 'seq', fmt(n_wait))
local i = 15
for _ = 1, n_pre do
  redis.call('RPUSH', PRE_DRAW, ARGV[i])
  if ARGV[10] == '0' then redis.call('HSET', JOINED, ARGV[i], '0') end
  i = i + 1
end
for _ = 1, n_sess do
  redis.call('HSET', JOINED, ARGV[i], ARGV[i + 1])
  redis.call('HSET', SESSIONS, ARGV[i], ARGV[i + 2])
  local s = parse_session(ARGV[i + 2])
  if ARGV[i + 3] == '1' then redis.call('ZADD', OPEN, s.exp, ARGV[i]) end
  i = i + 4
end
for _ = 1, n_wait do
  redis.call('HSET', JOINED, ARGV[i], ARGV[i + 1])
  redis.call('ZADD', WAITING, ARGV[i + 2], ARGV[i])
  i = i + 3
end
redis.call('SADD', EVENTS, ARGV[8])
return { 'ok', '1' }
"#;

/// No ARGV.
const SELL_OUT: &str = r#"
if not exists() then return { 'err', 'no_room' } end
redis.call('HSET', META, 'sold_out', '1')
return { 'ok' }
"#;

/// No ARGV.
const LOTTERY: &str = r#"
if not exists() then return { 'err', 'no_room' } end
if redis.call('HGET', META, 'policy') ~= 'lottery' then return { 'err', 'not_lottery' } end
if drawing() then return needs_draw() end
local commitment = redis.call('HGET', META, 'commitment') or ''
if not flag('drawn') then return { 'ok', commitment } end
return { 'ok', commitment, redis.call('HGET', META, 'seed') or '', redis.call('LRANGE', PRE_DRAW, 0, -1) }
"#;

/// ARGV: holder, now, until.
const LEAD: &str = r#"
if not exists() then return { 'err', 'no_room' } end
local holder = redis.call('HGET', META, 'lease_holder')
local free = true
if holder then
  local until_ms = num('lease_until')
  if until_ms == nil then return { 'err', 'corrupt', 'lease' } end
  free = holder == ARGV[1] or until_ms <= tonumber(ARGV[2])
end
if not free then return { 'ok', '0' } end
redis.call('HSET', META, 'lease_holder', ARGV[1], 'lease_until', ARGV[3])
return { 'ok', '1' }
"#;

/// The scripts, each with the prelude.
#[derive(Debug)]
struct Scripts {
    open: Script,
    join: Script,
    snapshot: Script,
    draw: Script,
    admit: Script,
    place: Script,
    session: Script,
    end: Script,
    reopen: Script,
    restore: Script,
    sell_out: Script,
    lottery: Script,
    lead: Script,
}

impl Scripts {
    fn new() -> Self {
        let s = |body: &str| Script::new(&format!("{PRELUDE}{body}"));
        Self {
            open: s(OPEN),
            join: s(JOIN),
            snapshot: s(SNAPSHOT),
            draw: s(DRAW),
            admit: s(ADMIT),
            place: s(PLACE),
            session: s(SESSION),
            end: s(END),
            reopen: s(REOPEN),
            restore: s(RESTORE),
            sell_out: s(SELL_OUT),
            lottery: s(LOTTERY),
            lead: s(LEAD),
        }
    }
}

/// A script's refusal (its `{'err', code}` answer).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refusal {
    NoRoom,
    Conflict,
    TooManyRooms,
    BadTier,
    Full,
    SoldOut,
    NotALottery,
    /// A due lottery is undrawn: draw, then call again.
    NeedsDraw,
    /// Users joined the lottery since its joiners were read: read again.
    Stale,
    /// The draw was asked before the sale opened.
    NotDue,
    /// Anything else: a malformed room or answer.
    Corrupt(String),
}

impl Refusal {
    fn parse(code: &str, detail: Option<String>) -> Self {
        match code {
            "no_room" => Self::NoRoom,
            "conflict" => Self::Conflict,
            "too_many_rooms" => Self::TooManyRooms,
            "bad_tier" => Self::BadTier,
            "full" => Self::Full,
            "sold_out" => Self::SoldOut,
            "not_lottery" => Self::NotALottery,
            "needs_draw" => Self::NeedsDraw,
            "stale" => Self::Stale,
            "not_due" => Self::NotDue,
            other => Self::Corrupt(format!("{other} {}", detail.unwrap_or_default())),
        }
    }

    /// The contract's error for this refusal on `event_id` (`tier`: the tier the call gave).
    fn error(self, event_id: &EventId, tier: u8) -> RoomError {
        match self {
            Self::NoRoom => RoomError::NoRoom(event_id.to_string()),
            Self::Conflict => RoomError::Conflict(event_id.to_string()),
            Self::TooManyRooms => RoomError::TooManyRooms,
            Self::BadTier => QueueError::BadTier(tier).into(),
            Self::Full => QueueError::Full.into(),
            Self::SoldOut => QueueError::SoldOut.into(),
            Self::NotALottery => RoomError::NotALottery(event_id.to_string()),
            Self::NeedsDraw | Self::Stale | Self::NotDue => {
                RoomError::Unavailable(format!("event {event_id}: the lottery draw did not settle"))
            }
            Self::Corrupt(what) => corrupt(event_id, &what),
        }
    }
}

fn corrupt(event_id: &EventId, what: &str) -> RoomError {
    RoomError::Unavailable(format!("event {event_id}: malformed waiting-room data in redis ({what})"))
}

fn unavailable(e: redis::RedisError) -> RoomError {
    RoomError::Unavailable(e.to_string())
}

/// `value` within the store's range (see the module's "Range"), else `Unavailable`.
fn in_range(name: &str, value: i64) -> Result<(), RoomError> {
    if (-MS_LIMIT..=MS_LIMIT).contains(&value) {
        Ok(())
    } else {
        Err(RoomError::Unavailable(format!("{name} {value} is outside the waiting-room store's range (±2^50 ms)")))
    }
}

/// Reads a script's answer, naming the event in errors.
struct Reader<'a> {
    event_id: &'a EventId,
}

impl Reader<'_> {
    fn bad(&self, what: &str) -> RoomError {
        corrupt(self.event_id, what)
    }

    fn text(&self, v: &Value) -> Result<String, RoomError> {
        match v {
            Value::BulkString(b) => String::from_utf8(b.clone()).map_err(|_| self.bad("text not utf-8")),
            Value::SimpleString(s) => Ok(s.clone()),
            Value::Okay => Ok("OK".to_string()),
            _ => Err(self.bad("expected text")),
        }
    }

    fn opt_text(&self, v: &Value) -> Result<Option<String>, RoomError> {
        match v {
            Value::Nil => Ok(None),
            v => self.text(v).map(Some),
        }
    }

    fn int(&self, v: &Value) -> Result<i64, RoomError> {
        match v {
            Value::Int(i) => Ok(*i),
            v => self.text(v)?.parse().map_err(|_| self.bad("expected an integer")),
        }
    }

    fn parse<T: std::str::FromStr>(&self, v: &Value) -> Result<T, RoomError> {
        self.text(v)?.parse().map_err(|_| self.bad("expected a number"))
    }

    fn array<'v>(&self, v: &'v Value) -> Result<&'v [Value], RoomError> {
        match v {
            Value::Array(items) => Ok(items),
            Value::Nil => Ok(&[]),
            _ => Err(self.bad("expected an array")),
        }
    }

    fn texts(&self, v: &Value) -> Result<Vec<String>, RoomError> {
        self.array(v)?.iter().map(|x| self.text(x)).collect()
    }

    fn get<'v>(&self, items: &'v [Value], i: usize) -> Result<&'v Value, RoomError> {
        items.get(i).ok_or_else(|| self.bad("answer too short"))
    }

    /// A script's answer: the values after `'ok'`, or its refusal.
    fn answer(&self, v: Value) -> Result<Result<Vec<Value>, Refusal>, RoomError> {
        let Value::Array(mut items) = v else { return Err(self.bad("expected an array")) };
        if items.is_empty() {
            return Err(self.bad("empty answer"));
        }
        let tag = self.text(&items.remove(0))?;
        match tag.as_str() {
            "ok" => Ok(Ok(items)),
            "err" => {
                let code = self.text(self.get(&items, 0)?)?;
                let detail = match items.get(1) {
                    Some(d) => self.opt_text(d)?,
                    None => None,
                };
                Ok(Err(Refusal::parse(&code, detail)))
            }
            _ => Err(self.bad("unknown answer")),
        }
    }

    /// A stored session (`position|admitted_at|expires_at|end`) of `user_id`.
    fn session(&self, user_id: &UserId, stored: &str) -> Result<(Session, Option<SessionEnd>), RoomError> {
        let parts: Vec<&str> = stored.split('|').collect();
        let [pos, at, exp, end] = parts.as_slice() else { return Err(self.bad("session")) };
        let position: u64 = pos.parse().map_err(|_| self.bad("session position"))?;
        let admitted_at_ms: i64 = at.parse().map_err(|_| self.bad("session admission"))?;
        let expires_at_ms: i64 = exp.parse().map_err(|_| self.bad("session expiry"))?;
        let ended = match *end {
            "" => None,
            "e" => Some(SessionEnd::Expired),
            purchase => {
                let ids = purchase.strip_prefix("p:").and_then(|ids| ids.split_once(':'));
                let parse = |id: &str| Uuid::parse_str(id).map_err(|_| self.bad("session purchase"));
                let (order, key) = ids.ok_or_else(|| self.bad("session end"))?;
                Some(SessionEnd::Purchased { order_id: parse(order)?.into(), key_id: parse(key)? })
            }
        };
        let session = Session { expires_at_ms, ..Session::new(self.event_id, user_id, position, admitted_at_ms, 0) };
        Ok((session, ended))
    }

    /// A place as the prelude's `place` answers it.
    fn place(&self, user_id: &UserId, v: &Value) -> Result<Place, RoomError> {
        let items = self.array(v)?;
        let tag = self.text(self.get(items, 0)?)?;
        Ok(match tag.as_str() {
            "admitted" => {
                let (session, ended) = self.session(user_id, &self.text(self.get(items, 1)?)?)?;
                Place::Admitted { session, ended }
            }
            "waiting" => {
                let position = u64::try_from(self.int(self.get(items, 1)?)?).map_err(|_| self.bad("position"))?;
                Place::Waiting { position }
            }
            "awaiting_draw" => Place::AwaitingDraw,
            "sold_out" => Place::SoldOut,
            "not_joined" => Place::NotJoined,
            _ => return Err(self.bad("place")),
        })
    }
}

fn policy_name(policy: Policy) -> &'static str {
    match policy {
        Policy::Fifo => "fifo",
        Policy::Lottery => "lottery",
        Policy::Priority => "priority",
    }
}

/// How a session's end is stored (the last field of `position|admitted_at|expires_at|end`).
fn session_end_code(why: SessionEnd) -> String {
    match why {
        SessionEnd::Purchased { order_id, key_id } => format!("p:{order_id}:{key_id}"),
        SessionEnd::Expired => "e".to_string(),
    }
}

/// A session as stored (see [`Reader::session`]).
fn stored_session(session: &Session, end: Option<SessionEnd>) -> String {
    let end = end.map(session_end_code).unwrap_or_default();
    format!("{}|{}|{}|{end}", session.position, session.admitted_at_ms, session.expires_at_ms)
}

/// The OPEN script's arguments for `spec` (`BadSpec` when out of range).
fn open_args(event_id: &EventId, spec: &RoomSpec, seed: [u8; 32]) -> Result<[String; 9], RoomError> {
    if !spec.valid() || in_range("opens_at_ms", spec.opens_at_ms).is_err() || spec.session_ttl_ms > MS_LIMIT {
        return Err(RoomError::BadSpec);
    }
    let policy = policy_name(spec.policy);
    let (opens, target, ttl) =
        (spec.opens_at_ms.to_string(), spec.target_active_sessions.to_string(), spec.session_ttl_ms.to_string());
    Ok([
        format!("{policy}|{opens}|{target}|{ttl}"),
        policy.to_string(),
        opens,
        target,
        ttl,
        hex::encode(seed),
        hex::encode(Sha256::digest(seed)),
        event_id.to_string(),
        MAX_ROOMS.to_string(),
    ])
}

/// The waiting rooms in Redis: every call is one atomic script (see the
/// module documentation), so any number of instances may share them.
#[derive(Clone)]
pub struct RedisRooms {
    conn: redis::aio::ConnectionManager,
    scripts: Arc<Scripts>,
    prefix: String,
}

impl std::fmt::Debug for RedisRooms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRooms").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

impl RedisRooms {
    /// Connects to the Redis at `url`; every key starts with `prefix:` (instances
    /// sharing rooms use the same prefix; tests use their own). The connection
    /// reconnects by itself; a call made while Redis is unreachable answers
    /// [`RoomError::Unavailable`]. Fails with `Unavailable` when the URL is
    /// malformed or Redis does not answer within 2 s.
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, RoomError> {
        let client = redis::Client::open(url).map_err(unavailable)?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Duration::from_millis(500))
            .set_response_timeout(Duration::from_secs(2))
            .set_number_of_retries(1);
        let conn = tokio::time::timeout(Duration::from_secs(2), client.get_connection_manager_with_config(config))
            .await
            .map_err(|_| RoomError::Unavailable("redis connect timed out".to_string()))?
            .map_err(unavailable)?;
        Ok(Self { conn, scripts: Arc::new(Scripts::new()), prefix: prefix.to_string() })
    }

    /// The room's keys, in the order the scripts' prelude names them.
    fn keys(&self, event_id: &EventId) -> [String; 7] {
        let k = |part: &str| format!("{}:room:{event_id}:{part}", self.prefix);
        [k("meta"), k("waiting"), k("pre_draw"), k("joined"), k("sessions"), k("open"), self.events_key()]
    }

    fn events_key(&self) -> String {
        format!("{}:rooms", self.prefix)
    }

    /// Runs `script` on `event_id`'s room with `args`.
    async fn run(
        &self,
        script: &Script,
        event_id: &EventId,
        args: &[String],
    ) -> Result<Result<Vec<Value>, Refusal>, RoomError> {
        let mut invocation = script.prepare_invoke();
        for key in self.keys(event_id) {
            invocation.key(key);
        }
        for arg in args {
            invocation.arg(arg);
        }
        let mut conn = self.conn.clone();
        let value: Value = invocation.invoke_async(&mut conn).await.map_err(unavailable)?;
        Reader { event_id }.answer(value)
    }

    /// `user_id`'s session on `event_id` as stored, if they have one.
    async fn stored_session(
        &self,
        event_id: &EventId,
        user_id: &UserId,
    ) -> Result<Option<(Session, Option<SessionEnd>)>, RoomError> {
        let r = Reader { event_id };
        let items = self
            .run(&self.scripts.session, event_id, &[user_id.to_string()])
            .await?
            .map_err(|e| e.error(event_id, 0))?;
        match r.opt_text(r.get(&items, 0)?)? {
            Some(stored) => r.session(user_id, &stored).map(Some),
            None => Ok(None),
        }
    }

    /// Runs `script` as [`RedisRooms::run`] does; when it answers that the
    /// lottery's draw is due, draws and runs it again (bounded).
    async fn run_drawn(
        &self,
        script: &Script,
        event_id: &EventId,
        args: &[String],
    ) -> Result<Result<Vec<Value>, Refusal>, RoomError> {
        for _ in 0..MAX_DRAW_ROUNDS {
            match self.run(script, event_id, args).await? {
                Err(Refusal::NeedsDraw) => self.draw(event_id).await?,
                answer => return Ok(answer),
            }
        }
        Err(Refusal::NeedsDraw.error(event_id, 0))
    }

    /// Draws `event_id`'s lottery if it is not drawn yet. Precondition: a
    /// script answered that the draw is due (it marked the room `drawing`,
    /// so the pre-draw list no longer grows).
    async fn draw(&self, event_id: &EventId) -> Result<(), RoomError> {
        let r = Reader { event_id };
        for _ in 0..MAX_DRAW_TRIES {
            let snapshot = self.run(&self.scripts.snapshot, event_id, &[]).await?.map_err(|e| e.error(event_id, 0))?;
            if r.text(r.get(&snapshot, 0)?)? == "1" {
                return Ok(());
            }
            let seed: [u8; 32] = hex::decode(r.text(r.get(&snapshot, 1)?)?)
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| r.bad("seed"))?;
            let joiners: Vec<UserId> = r.texts(r.get(&snapshot, 2)?)?.into_iter().map(UserId::from).collect();
            let mut args = vec![joiners.len().to_string()];
            args.extend(lottery_order(&seed, &joiners).into_iter().map(String::from));
            match self.run(&self.scripts.draw, event_id, &args).await? {
                Ok(_) => return Ok(()),
                Err(Refusal::Stale) => continue,
                Err(e) => return Err(e.error(event_id, 0)),
            }
        }
        Err(Refusal::Stale.error(event_id, 0))
    }
}

#[async_trait]
impl Rooms for RedisRooms {
    /// As [`Rooms::open`]; also `BadSpec` when `opens_at_ms` or
    /// `session_ttl_ms` is outside ±2^50 ms (see the module's "Range").
    async fn open(&self, event_id: &EventId, spec: &RoomSpec, seed: [u8; 32]) -> Result<(), RoomError> {
        let args = open_args(event_id, spec, seed)?;
        self.run(&self.scripts.open, event_id, &args).await?.map(|_| ()).map_err(|e| e.error(event_id, 0))
    }

    async fn reopen(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        session_id: SessionId,
        order_id: OrderId,
        now_ms: i64,
    ) -> Result<bool, RoomError> {
        in_range("now_ms", now_ms)?;
        let r = Reader { event_id };
        let Some((session, ended)) = self.stored_session(event_id, user_id).await? else { return Ok(false) };
        let Some(end @ SessionEnd::Purchased { order_id: o, .. }) = ended else { return Ok(false) };
        if session.session_id != session_id || o != order_id {
            return Ok(false);
        }
        let args = [user_id.to_string(), session.admitted_at_ms.to_string(), session_end_code(end), now_ms.to_string()];
        let items = self.run(&self.scripts.reopen, event_id, &args).await?.map_err(|e| e.error(event_id, 0))?;
        Ok(r.text(r.get(&items, 0)?)? == "1")
    }

    async fn restore(&self, event_id: &EventId, image: &RoomImage) -> Result<bool, RoomError> {
        let mut args = open_args(event_id, &image.spec, image.seed)?.to_vec();
        let flag = |b: bool| if b { "1" } else { "0" }.to_string();
        args.extend([flag(image.drawn), flag(image.sold_out)]);
        args.extend([image.pre_draw.len(), image.sessions.len(), image.waiting.len()].map(|n| n.to_string()));
        args.extend(image.pre_draw.iter().map(|u| u.to_string()));
        for (user, tier, session, end) in &image.sessions {
            in_range("expires_at_ms", session.expires_at_ms)?;
            args.extend([user.to_string(), tier.to_string(), stored_session(session, *end), flag(end.is_none())]);
        }
        let lottery = image.spec.policy == Policy::Lottery;
        for (i, (user, tier)) in image.waiting.iter().enumerate() {
            // The scores the join and draw scripts give (see the module's "Keys").
            let score = match (lottery, *tier) {
                (true, 0) => i as u64 + 1,
                _ => u64::from(*tier) * (1 << 40) + i as u64 + 1,
            };
            args.extend([user.to_string(), tier.to_string(), score.to_string()]);
        }
        let items = self.run(&self.scripts.restore, event_id, &args).await?.map_err(|e| e.error(event_id, 0))?;
        let r = Reader { event_id };
        Ok(r.text(r.get(&items, 0)?)? == "1")
    }

    async fn spec(&self, event_id: &EventId) -> Result<Option<RoomSpec>, RoomError> {
        let [meta, ..] = self.keys(event_id);
        let mut conn = self.conn.clone();
        let fields: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(meta)
            .arg(&["policy", "opens", "target", "ttl"])
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        let [policy, opens, target, ttl] = fields.as_slice() else { return Err(corrupt(event_id, "spec")) };
        if fields.iter().all(Option::is_none) {
            return Ok(None);
        }
        let bad = || corrupt(event_id, "spec");
        let policy = match policy.as_deref() {
            Some("fifo") => Policy::Fifo,
            Some("lottery") => Policy::Lottery,
            Some("priority") => Policy::Priority,
            _ => return Err(bad()),
        };
        fn field<T: std::str::FromStr>(v: &Option<String>) -> Option<T> {
            v.as_deref()?.parse().ok()
        }
        Ok(Some(RoomSpec {
            policy,
            opens_at_ms: field(opens).ok_or_else(bad)?,
            target_active_sessions: field(target).ok_or_else(bad)?,
            session_ttl_ms: field(ttl).ok_or_else(bad)?,
        }))
    }

    async fn events(&self) -> Result<Vec<EventId>, RoomError> {
        let mut conn = self.conn.clone();
        let mut events: Vec<String> =
            redis::cmd("SMEMBERS").arg(self.events_key()).query_async(&mut conn).await.map_err(unavailable)?;
        events.sort();
        Ok(events.into_iter().map(EventId::from).collect())
    }

    async fn join(&self, event_id: &EventId, user_id: &UserId, tier: u8, now_ms: i64) -> Result<Place, RoomError> {
        in_range("now_ms", now_ms)?;
        let args = [
            user_id.to_string(),
            tier.to_string(),
            now_ms.to_string(),
            MAX_TIERS.to_string(),
            MAX_QUEUE_USERS.to_string(),
        ];
        let items = self.run_drawn(&self.scripts.join, event_id, &args).await?.map_err(|e| e.error(event_id, tier))?;
        let r = Reader { event_id };
        r.place(user_id, r.get(&items, 0)?)
    }

    async fn place(&self, event_id: &EventId, user_id: &UserId) -> Result<(Place, Gauge), RoomError> {
        let items = self
            .run_drawn(&self.scripts.place, event_id, &[user_id.to_string()])
            .await?
            .map_err(|e| e.error(event_id, 0))?;
        let r = Reader { event_id };
        let place = r.place(user_id, r.get(&items, 0)?)?;
        let gauge = Gauge {
            waiting: u64::try_from(r.int(r.get(&items, 1)?)?).map_err(|_| r.bad("waiting"))?,
            active: u32::try_from(r.int(r.get(&items, 2)?)?).map_err(|_| r.bad("active"))?,
            rate_per_s: r.parse(r.get(&items, 3)?)?,
            sold_out: r.text(r.get(&items, 4)?)? == "1",
        };
        Ok((place, gauge))
    }

    async fn admit(&self, event_id: &EventId, n: u32, rate_per_s: f64, now_ms: i64) -> Result<Admitted, RoomError> {
        in_range("now_ms", now_ms)?;
        let args = [n.to_string(), rate_per_s.to_string(), now_ms.to_string()];
        let items = self.run_drawn(&self.scripts.admit, event_id, &args).await?.map_err(|e| e.error(event_id, 0))?;
        let r = Reader { event_id };
        let ttl_ms: i64 = r.parse(r.get(&items, 4)?)?;
        if !(1..=MS_LIMIT).contains(&ttl_ms) {
            return Err(r.bad("session ttl"));
        }
        let admitted = r
            .texts(r.get(&items, 0)?)?
            .into_iter()
            .enumerate()
            .map(|(i, user)| {
                let user = UserId::from(user);
                let session = Session::new(event_id, &user, i as u64 + 1, now_ms, ttl_ms);
                (user, session)
            })
            .collect();
        let expired_ms =
            r.array(r.get(&items, 1)?)?.iter().map(|v| r.parse::<u64>(v)).collect::<Result<Vec<_>, _>>()?;
        Ok(Admitted {
            admitted,
            expired_ms,
            active: u32::try_from(r.int(r.get(&items, 2)?)?).map_err(|_| r.bad("active"))?,
            waiting: u64::try_from(r.int(r.get(&items, 3)?)?).map_err(|_| r.bad("waiting"))?,
        })
    }

    async fn end_session(
        &self,
        event_id: &EventId,
        user_id: &UserId,
        session_id: SessionId,
        why: SessionEnd,
        now_ms: i64,
    ) -> Result<Option<u64>, RoomError> {
        in_range("now_ms", now_ms)?;
        let r = Reader { event_id };
        let Some((session, ended)) = self.stored_session(event_id, user_id).await? else { return Ok(None) };
        if session.session_id != session_id || ended.is_some() {
            return Ok(None);
        }
        let args = [user_id.to_string(), session.admitted_at_ms.to_string(), session_end_code(why), now_ms.to_string()];
        let items = self.run(&self.scripts.end, event_id, &args).await?.map_err(|e| e.error(event_id, 0))?;
        match items.first() {
            None => Ok(None),
            Some(v) => r.parse(v).map(Some),
        }
    }

    async fn sell_out(&self, event_id: &EventId) -> Result<(), RoomError> {
        self.run(&self.scripts.sell_out, event_id, &[]).await?.map(|_| ()).map_err(|e| e.error(event_id, 0))
    }

    async fn lottery(&self, event_id: &EventId) -> Result<LotteryRecord, RoomError> {
        let items = self.run_drawn(&self.scripts.lottery, event_id, &[]).await?.map_err(|e| e.error(event_id, 0))?;
        let r = Reader { event_id };
        let commitment = r.text(r.get(&items, 0)?)?;
        if items.len() == 1 {
            return Ok(LotteryRecord { commitment, seed: None, joiners: None });
        }
        let seed = r.text(r.get(&items, 1)?)?;
        let joiners = r.texts(r.get(&items, 2)?)?.into_iter().map(UserId::from).collect();
        Ok(LotteryRecord { commitment, seed: Some(seed), joiners: Some(joiners) })
    }

    async fn lead(&self, event_id: &EventId, holder: &str, lease_ms: i64, now_ms: i64) -> Result<bool, RoomError> {
        in_range("now_ms", now_ms)?;
        in_range("lease_ms", lease_ms)?;
        let args = [holder.to_string(), now_ms.to_string(), (now_ms + lease_ms).to_string()];
        let items = self.run(&self.scripts.lead, event_id, &args).await?.map_err(|e| e.error(event_id, 0))?;
        let r = Reader { event_id };
        Ok(r.text(r.get(&items, 0)?)? == "1")
    }
}
