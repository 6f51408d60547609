//! The fleet's records in Redis (or Valkey): key layout, the three Lua scripts, and
//! parsing of what comes back (every value is untrusted).
//!
//! Keys, for a fleet `S` (the service name):
//!
//! - `guards:fleet:{S}:members`: a set of member names;
//! - `guards:fleet:{S}:m:<member>`: a hash per member, expiring after the TTL unless the
//!   member's heartbeat renews it: `w` (weight), `h:<allowance>` (held, per allowance the
//!   member takes part in), `c:<breaker>` / `f:<breaker>` (the window counts of each
//!   breaker it attached);
//! - `guards:fleet:{S}:v:<allowance>`: the claim version of one allowance.
//!
//! Each script is one atomic step on the server, so a view is a consistent snapshot and a
//! claim is a compare-and-set on the version (see `guards_core::fleet`).

use std::time::Duration;

use guards_core::fleet::MemberRecord;
use redis::Value;

/// Read every live member's hash (dropping names whose hash expired) and the versions of
/// the allowances named in ARGV[2..]. Returns `{versions, name1, fields1, name2, ...}`.
const READ: &str = r"
local names = redis.call('SMEMBERS', KEYS[1])
local versions = {}
for i = 2, #ARGV do
  versions[#versions + 1] = redis.call('GET', ARGV[1] .. 'v:' .. ARGV[i]) or '0'
end
local out = {versions}
for _, n in ipairs(names) do
  local h = redis.call('HGETALL', ARGV[1] .. 'm:' .. n)
  if #h == 0 then
    redis.call('SREM', KEYS[1], n)
  else
    out[#out + 1] = n
    out[#out + 1] = h
  end
end
return out
";

/// Heartbeat: write fields ARGV[3..] to the member's hash, renew its TTL, list it.
const BEAT: &str = r"
if #ARGV > 2 then redis.call('HSET', KEYS[1], unpack(ARGV, 3)) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
return 1
";

/// Claim: if the allowance's version is still ARGV[1], write held ARGV[3] to field
/// ARGV[2], bump the version and return 1; otherwise 0.
const CLAIM: &str = r"
local v = redis.call('GET', KEYS[2]) or '0'
if v ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
redis.call('INCR', KEYS[2])
return 1
";

/// Leave: delete the member's hash and unlist it.
const LEAVE: &str = r"
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
";

/// One member as read back: its name and fields, every value parsed defensively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The member's name (lossy UTF-8).
    pub name: String,
    /// Its weight (1 if absent or unreadable).
    pub weight: u32,
    /// `(allowance, held, calls, failures)` for each allowance it takes part in; a held
    /// that does not parse reads as `u64::MAX` (clamped to the allowance: the member holds
    /// everything), counts that do not parse as 0.
    pub allowances: Vec<(String, u64, u64, u64)>,
    /// `(breaker, calls, failures)` for each breaker whose window counts it publishes
    /// (`c:<breaker>` / `f:<breaker>`, with or without a held of that name); counts that
    /// do not parse read as 0 (sanitize with `MemberRecord::sanitized` before use).
    pub breakers: Vec<(String, u64, u64)>,
}

impl Member {
    /// This member's record for `allowance`, or `None` if it does not take part.
    pub fn record(&self, allowance: &str) -> Option<MemberRecord> {
        self.allowances
            .iter()
            .find(|a| a.0 == allowance)
            .map(|&(_, held, calls, failures)| MemberRecord {
                id: name_id(&self.name),
                weight: self.weight,
                held,
                calls,
                failures,
            })
    }
}

impl Member {
    /// This member's published window counts for the breaker `name`, as a record
    /// (unsanitized) with no held, or `None` if it publishes none.
    pub fn breaker(&self, name: &str) -> Option<MemberRecord> {
        self.breakers
            .iter()
            .find(|b| b.0 == name)
            .map(|&(_, calls, failures)| MemberRecord {
                calls,
                failures,
                ..MemberRecord::new(name_id(&self.name), self.weight, 0)
            })
    }
}

/// A view: the version of each allowance asked for, and the live members.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// Versions, in the order the allowances were asked for (`None`: unreadable).
    pub versions: Vec<Option<String>>,
    /// Live members, sorted by name.
    pub members: Vec<Member>,
}

/// A stable 64-bit id for a member name (FNV-1a): ties in the share arithmetic break on it.
pub fn name_id(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The keys of one fleet.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// Keys for the fleet `service`.
    pub fn new(service: &str) -> Self {
        Keys {
            prefix: format!("guards:fleet:{{{service}}}:"),
        }
    }

    fn members(&self) -> String {
        format!("{}members", self.prefix)
    }

    fn member(&self, name: &str) -> String {
        format!("{}m:{name}", self.prefix)
    }

    fn version(&self, allowance: &str) -> String {
        format!("{}v:{allowance}", self.prefix)
    }

    /// Read a view of the allowances `allowances`.
    pub fn read(
        &self,
        con: &mut redis::Connection,
        allowances: &[String],
    ) -> redis::RedisResult<View> {
        let mut c = redis::cmd("EVAL");
        c.arg(READ).arg(1).arg(self.members()).arg(&self.prefix);
        for a in allowances {
            c.arg(a);
        }
        let v: Value = c.query(con)?;
        Ok(parse_view(v, allowances.len()))
    }

    /// Heartbeat with `fields` (name, value pairs).
    pub fn beat(
        &self,
        con: &mut redis::Connection,
        member: &str,
        ttl: Duration,
        fields: &[(String, String)],
    ) -> redis::RedisResult<()> {
        let mut c = redis::cmd("EVAL");
        c.arg(BEAT)
            .arg(2)
            .arg(self.member(member))
            .arg(self.members())
            .arg(ttl_ms(ttl))
            .arg(member);
        for (k, v) in fields {
            c.arg(k).arg(v);
        }
        let _: Value = c.query(con)?;
        Ok(())
    }

    /// Claim `held` for `allowance` if its version is still `version`.
    pub fn claim(
        &self,
        con: &mut redis::Connection,
        member: &str,
        allowance: &str,
        version: &str,
        held: u64,
    ) -> redis::RedisResult<bool> {
        let won: i64 = redis::cmd("EVAL")
            .arg(CLAIM)
            .arg(2)
            .arg(self.member(member))
            .arg(self.version(allowance))
            .arg(version)
            .arg(format!("h:{allowance}"))
            .arg(held)
            .query(con)?;
        Ok(won == 1)
    }

    /// Remove `member` from the fleet.
    pub fn leave(&self, con: &mut redis::Connection, member: &str) -> redis::RedisResult<()> {
        let _: Value = redis::cmd("EVAL")
            .arg(LEAVE)
            .arg(2)
            .arg(self.member(member))
            .arg(self.members())
            .arg(member)
            .query(con)?;
        Ok(())
    }
}

fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

fn parse_view(v: Value, n_allowances: usize) -> View {
    let Value::Array(items) = v else {
        return View::default();
    };
    let mut items = items.into_iter();
    let versions = match items.next() {
        Some(Value::Array(vs)) => vs.iter().map(text).collect(),
        _ => Vec::new(),
    };
    let mut versions: Vec<Option<String>> = versions;
    versions.resize(n_allowances, None);
    let mut members = Vec::new();
    while let (Some(name), Some(fields)) = (items.next(), items.next()) {
        let (Some(name), Value::Array(fields)) = (text(&name), fields) else {
            continue;
        };
        members.push(parse_member(name, &fields));
    }
    members.sort_by(|a, b| a.name.cmp(&b.name));
    View { versions, members }
}

fn parse_member(name: String, fields: &[Value]) -> Member {
    let mut weight = 1u32;
    let mut held: Vec<(String, u64)> = Vec::new();
    let mut counts: Vec<(String, bool, u64)> = Vec::new();
    for pair in fields.chunks(2) {
        let [k, v] = pair else { continue };
        let (Some(k), Some(v)) = (text(k), text(v)) else {
            continue;
        };
        let num = v.trim().parse::<u64>().ok();
        if k == "w" {
            weight = num.and_then(|n| u32::try_from(n).ok()).unwrap_or(1);
        } else if let Some(a) = k.strip_prefix("h:") {
            held.push((a.to_owned(), num.unwrap_or(u64::MAX)));
        } else if let Some(a) = k.strip_prefix("c:") {
            counts.push((a.to_owned(), true, num.unwrap_or(0)));
        } else if let Some(a) = k.strip_prefix("f:") {
            counts.push((a.to_owned(), false, num.unwrap_or(0)));
        }
    }
    let mut breakers: Vec<(String, u64, u64)> = Vec::new();
    for (name, calls, n) in &counts {
        let i = match breakers.iter().position(|b| &b.0 == name) {
            Some(i) => i,
            None => {
                breakers.push((name.clone(), 0, 0));
                breakers.len() - 1
            }
        };
        if let Some(b) = breakers.get_mut(i) {
            if *calls {
                b.1 = *n;
            } else {
                b.2 = *n;
            }
        }
    }
    let allowances = held
        .into_iter()
        .map(|(a, h)| {
            let get = |calls: bool| {
                counts
                    .iter()
                    .find(|c| c.0 == a && c.1 == calls)
                    .map_or(0, |c| c.2)
            };
            let (c, f) = (get(true), get(false));
            (a, h, c, f)
        })
        .collect();
    Member {
        name,
        weight,
        allowances,
        breakers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn garbage_parses_conservatively() {
        let v = Value::Array(vec![
            Value::Array(vec![bulk("3"), Value::Nil]),
            bulk("b"),
            Value::Array(vec![
                bulk("w"),
                bulk("99999999999999"),
                bulk("h:stock"),
                bulk("lots"),
                bulk("c:stock"),
                bulk("-5"),
                bulk("odd"),
            ]),
            bulk("a"),
            Value::Array(vec![bulk("w"), bulk("2"), bulk("h:stock"), bulk("7")]),
            bulk("dangling"),
        ]);
        let view = parse_view(v, 3);
        assert_eq!(view.versions, vec![Some("3".into()), None, None]);
        assert_eq!(view.members.len(), 2);
        assert_eq!(view.members[0].name, "a");
        let b = &view.members[1];
        assert_eq!(
            (b.weight, b.allowances.clone()),
            (1, vec![("stock".into(), u64::MAX, 0, 0)])
        );
        assert_eq!(view.members[0].record("stock").unwrap().held, 7);
        assert_eq!(b.breakers, vec![("stock".into(), 0, 0)]);
        assert_eq!(b.breaker("stock").map(|r| (r.calls, r.held)), Some((0, 0)));
        assert!(view.members[0].breaker("stock").is_none());
        assert!(view.members[0].record("other").is_none());
        assert_eq!(parse_view(Value::Nil, 1).members.len(), 0);
    }
}
