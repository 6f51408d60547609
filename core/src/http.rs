//! HTTP answers in the call contract: the [`Outcome`] of a status code, and a `Retry-After`
//! header read into a delay, so every binding classifies an HTTP answer the same way.
//!
//! # Status → outcome ([`outcome_of_status`])
//!
//! | status | outcome |
//! |---|---|
//! | 100–399 | `success` (a 1xx can only be final for a protocol switch, `101`, which succeeded) |
//! | 408 Request Timeout | `timeout` |
//! | 429 Too Many Requests | `throttled` |
//! | 503 Service Unavailable with a readable Retry-After | `throttled` |
//! | 503 without one, and every other 5xx | `other_transient` |
//! | every other 4xx | `permanent` |
//! | anything outside 100–599 (0, 600, 999...) | `other_transient`: a malformed answer, as from a broken proxy, is treated as a failure of the exchange that may go away |
//!
//! [`classify`] does both steps for one answer and keeps the Retry-After only where it
//! means "not before" for this request: with a `throttled` outcome. (On a redirect it
//! means something else, and on a success there is nothing to retry.)
//!
//! # Retry-After ([`parse_retry_after`])
//!
//! RFC 9110 §10.2.3: `Retry-After = HTTP-date / delay-seconds`. Core reads no clock, so
//! the caller passes its wall clock as unix seconds (`now_unix_secs`) to turn a date into a
//! delay. Optional whitespace (spaces, tabs) around the value is ignored.
//!
//! - **delay-seconds**: one or more ASCII digits, the delay in whole seconds. A number too
//!   big for [`Nanos`] (say 10^30, or 5,000 digits) saturates at [`Nanos::MAX`]: a retry
//!   policy then gives up with `RetryAfterTooLong` instead of waiting for ever.
//! - **HTTP-date**, in any of its three forms: IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`,
//!   the obsolete RFC 850 form `Sunday, 06-Nov-94 08:49:37 GMT` (its two-digit year is read
//!   in the century of `now`; a year that then lies more than 50 years ahead is the most
//!   recent past year with those digits), and
//!   ANSI C's asctime form `Sun Nov  6 08:49:37 1994`. Day and month names are matched
//!   without regard to ASCII case; the day name is checked to be a day name but not against
//!   the date; the date and time must exist (the 30th of February, hour 24 or minute 60 do
//!   not; a leap second, `:60`, is accepted and read as the next second). The delay is
//!   `date − now`, zero for a date in the past, saturating at [`Nanos::MAX`] for a date
//!   beyond it (the year 9999).
//! - **Anything else is garbage and gives `None`** — no Retry-After — never an error: an
//!   empty value, a sign (`-5`, `+5`), a fraction (`1.5`), a unit (`5s`), digits other than
//!   ASCII (`²`, `٣`), other non-ASCII bytes, a date in another format or with a time zone
//!   other than `GMT`. A bad header must not lose the answer it came with.
//!
//! # Examples
//! ```
//! use guards_core::http::{classify, format_http_date, parse_retry_after};
//! use guards_core::{Nanos, Outcome};
//!
//! let now = 784_111_777; // Sun, 06 Nov 1994 08:49:37 GMT
//! assert_eq!(parse_retry_after(b"120", now), Some(Nanos::from_secs(120)));
//! assert_eq!(
//!     parse_retry_after(b"Sun, 06 Nov 1994 08:51:37 GMT", now),
//!     Some(Nanos::from_secs(120))
//! );
//! assert_eq!(parse_retry_after(b"Sun Nov  6 08:49:00 1994", now), Some(Nanos::ZERO)); // past
//! assert_eq!(parse_retry_after(b"1.5", now), None); // garbage: no Retry-After
//! assert_eq!(parse_retry_after("9".repeat(5_000).as_bytes(), now), Some(Nanos::MAX));
//!
//! let answer = classify(503, Some(b"30"), now);
//! assert_eq!((answer.outcome, answer.retry_after), (Outcome::Throttled, Some(Nanos::from_secs(30))));
//! assert_eq!(classify(503, Some(b"soon"), now).outcome, Outcome::OtherTransient);
//! assert_eq!(classify(404, None, now).outcome, Outcome::Permanent);
//!
//! assert_eq!(format_http_date(now).unwrap().as_str(), "Sun, 06 Nov 1994 08:49:37 GMT");
//! ```
//!
//! # References
//!
//! - RFC 9110, *HTTP Semantics*: §5.6.7 (HTTP-date, its three forms, the two-digit year
//!   rule, case sensitivity), §10.2.3 (Retry-After), §15 (status codes: 408, 429 in RFC
//!   6585, 503).
//! - Basketly setting C2 (docs/basketly.md, "C2: one retry layer"): throttling answers and
//!   Retry-After in the retry decision.

use crate::outcome::Outcome;
use crate::time::Nanos;

/// The outcome of an HTTP answer with `status`; `has_retry_after` tells whether it carried
/// a readable Retry-After (it turns a 503 into `throttled`). See the [module docs](self).
pub const fn outcome_of_status(status: u16, has_retry_after: bool) -> Outcome {
    match status {
        100..=399 => Outcome::Success,
        408 => Outcome::Timeout,
        429 => Outcome::Throttled,
        503 if has_retry_after => Outcome::Throttled,
        400..=499 => Outcome::Permanent,
        500..=599 => Outcome::OtherTransient,
        _ => Outcome::OtherTransient,
    }
}

/// An HTTP answer classified: its outcome and the Retry-After to pass beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HttpOutcome {
    /// The call contract's outcome.
    pub outcome: Outcome,
    /// The server's Retry-After, a duration; only with a `throttled` outcome.
    pub retry_after: Option<Nanos>,
}

/// Classify one answer: `status`, its raw `Retry-After` header value if any, and the
/// caller's wall clock in unix seconds (for a date). See the [module docs](self).
pub fn classify(status: u16, retry_after: Option<&[u8]>, now_unix_secs: u64) -> HttpOutcome {
    let after = retry_after.and_then(|v| parse_retry_after(v, now_unix_secs));
    let outcome = outcome_of_status(status, after.is_some());
    HttpOutcome {
        outcome,
        retry_after: if outcome == Outcome::Throttled {
            after
        } else {
            None
        },
    }
}

/// Read a `Retry-After` value into a delay from `now_unix_secs` (the caller's wall clock):
/// `None` for garbage, zero for a date in the past, [`Nanos::MAX`] when it does not fit.
/// Never panics, never allocates. See the [module docs](self).
pub fn parse_retry_after(value: &[u8], now_unix_secs: u64) -> Option<Nanos> {
    let v = trim(value);
    if v.is_empty() {
        return None;
    }
    if v.iter().all(u8::is_ascii_digit) {
        let secs = v.iter().try_fold(0u64, |acc, &d| {
            acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        });
        return Some(secs.map_or(Nanos::MAX, Nanos::from_secs));
    }
    let date = parse_http_date(v, now_unix_secs)?;
    let now = i128::from(now_unix_secs);
    let delay = i128::from(date) - now;
    if delay <= 0 {
        return Some(Nanos::ZERO);
    }
    Some(u64::try_from(delay).map_or(Nanos::MAX, Nanos::from_secs))
}

/// Parse an HTTP-date in any of its three forms into unix seconds (negative before 1970).
/// `now_unix_secs` places an RFC 850 two-digit year. `None` if `value` is not one of the
/// forms or names a date or time that does not exist. Leading and trailing whitespace is
/// not accepted here (see [`parse_retry_after`]).
pub fn parse_http_date(value: &[u8], now_unix_secs: u64) -> Option<i64> {
    imf_fixdate(value)
        .or_else(|| rfc850_date(value, now_unix_secs))
        .or_else(|| asctime_date(value))
}

/// Room for an IMF-fixdate: 29 bytes.
pub const HTTP_DATE_LEN: usize = 29;

/// An IMF-fixdate in a fixed buffer (no allocation), e.g. for a `Retry-After` or `Date`
/// header. Always ASCII.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HttpDate {
    bytes: [u8; HTTP_DATE_LEN],
}

impl HttpDate {
    /// The text, e.g. `"Sun, 06 Nov 1994 08:49:37 GMT"`.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes).unwrap_or("")
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl core::fmt::Debug for HttpDate {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("HttpDate").field(&self.as_str()).finish()
    }
}

impl core::fmt::Display for HttpDate {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The largest unix time an IMF-fixdate can spell: 9999-12-31 23:59:59.
pub const MAX_HTTP_DATE: u64 = 253_402_300_799;

/// `unix_secs` as an IMF-fixdate, or `None` after [`MAX_HTTP_DATE`] (a four-digit year).
pub fn format_http_date(unix_secs: u64) -> Option<HttpDate> {
    if unix_secs > MAX_HTTP_DATE {
        return None;
    }
    let secs = i64::try_from(unix_secs).ok()?;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let weekday = weekday_of(days);
    let mut b = [b' '; HTTP_DATE_LEN];
    let name = DAY_NAMES.get(weekday)?;
    let mon = MONTH_NAMES.get(usize::try_from(month).ok()?.checked_sub(1)?)?;
    b.get_mut(0..3)?.copy_from_slice(name.as_bytes());
    *b.get_mut(3)? = b',';
    put2(&mut b, 5, u64::from(day))?;
    b.get_mut(8..11)?.copy_from_slice(mon.as_bytes());
    let y = u64::try_from(year).ok()?;
    put2(&mut b, 12, y / 100)?;
    put2(&mut b, 14, y % 100)?;
    let r = u64::try_from(rem).ok()?;
    put2(&mut b, 17, r / 3_600)?;
    *b.get_mut(19)? = b':';
    put2(&mut b, 20, r / 60 % 60)?;
    *b.get_mut(22)? = b':';
    put2(&mut b, 23, r % 60)?;
    b.get_mut(26..29)?.copy_from_slice(b"GMT");
    Some(HttpDate { bytes: b })
}

// ----------------------------------------------------------------- parsing helpers

const DAY_NAMES: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTH_NAMES: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn trim(v: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = v.iter().position(|b| !is_ows(b)).unwrap_or(v.len());
    let end = v.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
    v.get(start..end).unwrap_or(&[])
}

fn put2(b: &mut [u8], at: usize, v: u64) -> Option<()> {
    let digits = b.get_mut(at..at + 2)?;
    let tens = u8::try_from(v / 10 % 10).ok()?;
    let ones = u8::try_from(v % 10).ok()?;
    digits.copy_from_slice(&[b'0' + tens, b'0' + ones]);
    Some(())
}

/// A cursor over the bytes of one date.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn literal(&mut self, lit: &[u8]) -> Option<()> {
        let (head, tail) = self.rest.split_at_checked(lit.len())?;
        if head.eq_ignore_ascii_case(lit) {
            self.rest = tail;
            Some(())
        } else {
            None
        }
    }

    /// Exactly `n` ASCII digits.
    fn digits(&mut self, n: usize) -> Option<u32> {
        let (head, tail) = self.rest.split_at_checked(n)?;
        let mut v = 0u32;
        for &d in head {
            if !d.is_ascii_digit() {
                return None;
            }
            v = v * 10 + u32::from(d - b'0');
        }
        self.rest = tail;
        Some(v)
    }

    /// One of `names` (ASCII case-insensitive); its index.
    fn name(&mut self, names: &[&str]) -> Option<usize> {
        let i = names.iter().position(|n| {
            self.rest
                .get(..n.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(n.as_bytes()))
        })?;
        self.rest = self.rest.get(names.get(i)?.len()..)?;
        Some(i)
    }

    /// `HH:MM:SS` as seconds of the day (a leap second `:60` allowed).
    fn time(&mut self) -> Option<i64> {
        let h = self.digits(2)?;
        self.literal(b":")?;
        let m = self.digits(2)?;
        self.literal(b":")?;
        let s = self.digits(2)?;
        if h > 23 || m > 59 || s > 60 {
            return None;
        }
        Some(i64::from(h * 3_600 + m * 60 + s))
    }

    fn end(&self) -> Option<()> {
        self.rest.is_empty().then_some(())
    }
}

/// Month index (0-based) from its name.
fn month(c: &mut Cursor<'_>) -> Option<u32> {
    c.name(&MONTH_NAMES).and_then(|i| u32::try_from(i).ok())
}

/// Unix seconds of a date and second-of-day, if the date exists.
fn unix_of(year: i64, month0: u32, day: u32, secs: i64) -> Option<i64> {
    let month = month0 + 1;
    if day == 0 || day > days_in_month(year, month) {
        return None;
    }
    days_from_civil(year, month, day)
        .checked_mul(86_400)?
        .checked_add(secs)
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`
fn imf_fixdate(v: &[u8]) -> Option<i64> {
    let mut c = Cursor { rest: v };
    c.name(&DAY_NAMES)?;
    c.literal(b", ")?;
    let day = c.digits(2)?;
    c.literal(b" ")?;
    let mon = month(&mut c)?;
    c.literal(b" ")?;
    let year = c.digits(4)?;
    c.literal(b" ")?;
    let secs = c.time()?;
    c.literal(b" GMT")?;
    c.end()?;
    unix_of(i64::from(year), mon, day, secs)
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`
fn rfc850_date(v: &[u8], now_unix_secs: u64) -> Option<i64> {
    let mut c = Cursor { rest: v };
    c.name(&LONG_DAY_NAMES)?;
    c.literal(b", ")?;
    let day = c.digits(2)?;
    c.literal(b"-")?;
    let mon = month(&mut c)?;
    c.literal(b"-")?;
    let yy = i64::from(c.digits(2)?);
    c.literal(b" ")?;
    let secs = c.time()?;
    c.literal(b" GMT")?;
    c.end()?;
    // RFC 9110 §5.6.7: read the two digits in the current century; a year that then lies
    // more than 50 years in the future is the most recent past year with those digits.
    let now_days = i64::try_from(now_unix_secs / 86_400).ok()?;
    let (this_year, _, _) = civil_from_days(now_days);
    let mut year = this_year - this_year.rem_euclid(100) + yy;
    if year > this_year + 50 {
        year -= 100;
    }
    unix_of(year, mon, day, secs)
}

/// `Sun Nov  6 08:49:37 1994` (the day is two digits, or a space and one digit)
fn asctime_date(v: &[u8]) -> Option<i64> {
    let mut c = Cursor { rest: v };
    c.name(&DAY_NAMES)?;
    c.literal(b" ")?;
    let mon = month(&mut c)?;
    c.literal(b" ")?;
    let day = if c.literal(b" ").is_some() {
        c.digits(1)?
    } else {
        c.digits(2)?
    };
    c.literal(b" ")?;
    let secs = c.time()?;
    c.literal(b" ")?;
    let year = c.digits(4)?;
    c.end()?;
    unix_of(i64::from(year), mon, day, secs)
}

// ----------------------------------------------------------------- civil calendar

const fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

const fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (`month` 1..=12). Counts in eras of
/// 400 years (146,097 days), with years starting in March so that the leap day is last.
const fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400);
    let m = month as i64;
    let month_from_march = if m > 2 { m - 3 } else { m + 9 };
    let day_of_year = (153 * month_from_march + 2) / 5 + day as i64 - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The proleptic Gregorian date of a day count since 1970-01-01: `(year, month 1..=12,
/// day 1..=31)`. The inverse of `days_from_civil`.
const fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + if month <= 2 { 1 } else { 0 };
    (year, month, day)
}

/// 0 = Monday … 6 = Sunday (1970-01-01 was a Thursday).
const fn weekday_of(days: i64) -> usize {
    (days + 3).rem_euclid(7) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_round_trips_and_known_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(weekday_of(0), 3); // Thursday
        for d in [-800_000i64, -1, 0, 59, 60, 11_016, 2_932_896] {
            let (y, m, day) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, day), d);
        }
        assert_eq!(days_in_month(1900, 2), 28);
        assert_eq!(days_in_month(2000, 2), 29);
    }

    #[test]
    fn three_forms_of_the_same_instant() {
        let t = 784_111_777;
        assert_eq!(
            parse_http_date(b"Sun, 06 Nov 1994 08:49:37 GMT", 0),
            Some(t)
        );
        assert_eq!(
            parse_http_date(b"Sunday, 06-Nov-94 08:49:37 GMT", t as u64),
            Some(t)
        );
        assert_eq!(parse_http_date(b"Sun Nov  6 08:49:37 1994", 0), Some(t));
        assert_eq!(
            parse_http_date(b"sun, 06 nov 1994 08:49:37 gmt", 0),
            Some(t)
        );
    }

    #[test]
    fn impossible_dates_are_garbage() {
        for v in [
            "Mon, 30 Feb 2015 00:00:00 GMT",
            "Mon, 01 Jan 2015 24:00:00 GMT",
            "Mon, 01 Jan 2015 23:60:00 GMT",
            "Mon, 00 Jan 2015 00:00:00 GMT",
            "Mon, 01 Jan 2015 00:00:00 UTC",
            "Mon, 01 Jan 2015 00:00:00 GMT ",
            "Xyz, 01 Jan 2015 00:00:00 GMT",
            "Mon, 1 Jan 2015 00:00:00 GMT",
        ] {
            assert_eq!(parse_http_date(v.as_bytes(), 0), None, "{v}");
        }
    }
}
