//! Durations and instants as a topology spells them.
//!
//! - A duration is a string with a unit, `"250ns"`, `"40us"` (or `"40µs"`), `"40ms"`,
//!   `"2s"`, `"1.5s"`, or a plain number of **seconds** (`0.04`), as the Python API takes
//!   it. It is written back in one canonical form: a whole number in the largest unit
//!   that holds it exactly (`"1500ms"`, `"2s"`, `"250ns"`).
//! - An instant is a clock time of day, `"20:00:07"` or `"20:00:07.032"` (up to nine
//!   fraction digits), or a number of seconds since midnight. It is written back as
//!   `"HH:MM:SS.mmm"`, or with nine fraction digits when it is not a whole millisecond.
//!
//! The serde adapters ([`duration`], [`opt_duration`], [`instant`]) are used with
//! `#[serde(with = ...)]` on the topology's fields; their errors say what is accepted, and
//! the path of the value is added by the reader ([`crate::Topology::from_json`]).

use guards_core::Nanos;
use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;

use super::clock;

/// What a duration may look like (the `expected` of its errors).
pub const DURATION_EXPECTED: &str =
    "a duration: \"40ms\", \"2s\", \"1.5s\", \"250us\", \"10ns\" or a number of seconds";

/// What an instant may look like.
pub const INSTANT_EXPECTED: &str =
    "a clock time \"HH:MM:SS[.fff]\" or a number of seconds since midnight";

/// Parse a duration string with its unit (`"40ms"`, `"1.5s"`, ...); a bare number is
/// refused here (see [`duration_from_secs`]).
pub fn parse_duration(text: &str) -> Option<Nanos> {
    let s = text.trim();
    let (num, scale): (&str, f64) = if let Some(x) = s.strip_suffix("ns") {
        (x, 1e-9)
    } else if let Some(x) = s.strip_suffix("us") {
        (x, 1e-6)
    } else if let Some(x) = s.strip_suffix("µs") {
        (x, 1e-6)
    } else if let Some(x) = s.strip_suffix("ms") {
        (x, 1e-3)
    } else if let Some(x) = s.strip_suffix('s') {
        (x, 1.0)
    } else {
        return None;
    };
    let num = num.trim();
    // A whole number of the unit is exact; a fraction goes through f64 and is rounded to
    // the nearest nanosecond.
    if let Ok(n) = num.parse::<u64>() {
        let per = (scale * 1e9).round() as u64;
        return n.checked_mul(per).map(Nanos::new);
    }
    let x: f64 = num.parse().ok()?;
    duration_from_secs(x * scale)
}

/// A number of seconds as a duration (rounded to the nanosecond); `None` if it is
/// negative, not finite or too large.
pub fn duration_from_secs(secs: f64) -> Option<Nanos> {
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    let ns = (secs * 1e9).round();
    if ns >= 18_446_744_073_709_551_616.0 {
        return None;
    }
    Some(Nanos::new(ns as u64))
}

/// The canonical text of a duration: a whole number in the largest unit that holds it.
pub fn format_duration(d: Nanos) -> String {
    let n = d.as_u64();
    if n == 0 {
        "0s".to_string()
    } else if n % 1_000_000_000 == 0 {
        format!("{}s", n / 1_000_000_000)
    } else if n % 1_000_000 == 0 {
        format!("{}ms", n / 1_000_000)
    } else if n % 1_000 == 0 {
        format!("{}us", n / 1_000)
    } else {
        format!("{n}ns")
    }
}

/// The canonical text of an instant.
pub fn format_instant(t: Nanos) -> String {
    if t.as_u64() % 1_000_000 == 0 {
        clock::format_millis(t)
    } else {
        format!("{}.{:09}", clock::format(t), t.as_u64() % 1_000_000_000)
    }
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = Nanos;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(DURATION_EXPECTED)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Nanos, E> {
        v.checked_mul(1_000_000_000)
            .map(Nanos::new)
            .ok_or_else(|| E::custom(format!("{DURATION_EXPECTED} (at most 2^64-1 ns)")))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Nanos, E> {
        match u64::try_from(v) {
            Ok(u) => self.visit_u64(u),
            Err(_) => Err(E::custom(format!("{DURATION_EXPECTED} (not negative)"))),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Nanos, E> {
        duration_from_secs(v).ok_or_else(|| E::custom(DURATION_EXPECTED))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Nanos, E> {
        parse_duration(v).ok_or_else(|| E::custom(DURATION_EXPECTED))
    }
}

struct InstantVisitor;

impl Visitor<'_> for InstantVisitor {
    type Value = Nanos;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(INSTANT_EXPECTED)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Nanos, E> {
        DurationVisitor.visit_u64(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Nanos, E> {
        DurationVisitor.visit_i64(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Nanos, E> {
        duration_from_secs(v).ok_or_else(|| E::custom(INSTANT_EXPECTED))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Nanos, E> {
        clock::parse(v).ok_or_else(|| E::custom(INSTANT_EXPECTED))
    }
}

/// `#[serde(with = "duration")]` for a [`Nanos`] duration.
pub mod duration {
    use super::*;

    /// Write the canonical text.
    pub fn serialize<S: Serializer>(d: &Nanos, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    /// Read a duration string or a number of seconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Nanos, D::Error> {
        d.deserialize_any(DurationVisitor)
    }
}

/// `#[serde(with = "opt_duration")]` for an optional duration (`null`: none).
pub mod opt_duration {
    use super::*;
    use serde::Deserialize;

    /// Write the canonical text, or `null`.
    pub fn serialize<S: Serializer>(d: &Option<Nanos>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    /// Read `null`, `"none"`, a duration string or a number of seconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Nanos>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Str(String),
            Num(serde_json::Number),
        }
        match Option::<Raw>::deserialize(d)? {
            None => Ok(None),
            Some(Raw::Str(s)) if s.trim() == "none" => Ok(None),
            Some(Raw::Str(s)) => parse_duration(&s)
                .map(Some)
                .ok_or_else(|| de::Error::custom(format!("{DURATION_EXPECTED}, or none"))),
            Some(Raw::Num(n)) => n
                .as_f64()
                .and_then(duration_from_secs)
                .map(Some)
                .ok_or_else(|| de::Error::custom(format!("{DURATION_EXPECTED}, or none"))),
        }
    }
}

/// `#[serde(with = "instant")]` for an instant (time of day).
pub mod instant {
    use super::*;

    /// Write the canonical text.
    pub fn serialize<S: Serializer>(t: &Nanos, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_instant(*t))
    }

    /// Read a clock time or a number of seconds since midnight.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Nanos, D::Error> {
        d.deserialize_any(InstantVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_units_and_seconds_and_write_one_form() {
        assert_eq!(parse_duration("40ms"), Some(Nanos::from_millis(40)));
        assert_eq!(parse_duration("1.5s"), Some(Nanos::from_millis(1500)));
        assert_eq!(parse_duration("2s"), Some(Nanos::from_secs(2)));
        assert_eq!(parse_duration("250us"), Some(Nanos::from_micros(250)));
        assert_eq!(parse_duration("250µs"), Some(Nanos::from_micros(250)));
        assert_eq!(parse_duration("7ns"), Some(Nanos::new(7)));
        assert_eq!(parse_duration("40"), None);
        assert_eq!(parse_duration("-1ms"), None);
        assert_eq!(parse_duration("NaNs"), None);
        assert_eq!(duration_from_secs(0.04), Some(Nanos::from_millis(40)));
        assert_eq!(duration_from_secs(-0.1), None);
        assert_eq!(duration_from_secs(f64::INFINITY), None);
        for d in [0, 7, 250_000, 40_000_000, 1_500_000_000, 2_000_000_000] {
            let d = Nanos::new(d);
            assert_eq!(parse_duration(&format_duration(d)), Some(d));
        }
        assert_eq!(format_duration(Nanos::from_millis(1500)), "1500ms");
    }

    #[test]
    fn instants_round_trip() {
        for t in [
            clock::hms(20, 0, 7),
            Nanos::new(clock::hms(20, 0, 7).as_u64() + 32_000_000),
            Nanos::new(clock::hms(20, 0, 7).as_u64() + 1),
        ] {
            assert_eq!(clock::parse(&format_instant(t)), Some(t));
        }
    }
}
