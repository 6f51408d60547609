//! `http`: status → outcome, and Retry-After parsing. Property tests: no input panics,
//! every formatted date of each of the three HTTP-date forms reads back to its instant,
//! delta-seconds read back exactly (or saturate), garbage is `None`, never an error.
#![cfg(not(loom))]

use guards_core::http::{
    classify, format_http_date, outcome_of_status, parse_http_date, parse_retry_after,
    MAX_HTTP_DATE,
};
use guards_core::{Nanos, Outcome};
use proptest::prelude::*;

/// Sun, 06 Nov 1994 08:49:37 GMT
const NOW: u64 = 784_111_777;

const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A civil date of unix seconds, computed independently of the crate: walk years and
/// months (slow, obviously right). `(year, month 1..=12, day, hour, minute, second,
/// weekday 0 = Monday)`.
fn civil(secs: u64) -> (u64, usize, u64, u64, u64, u64, usize) {
    assert!(secs <= MAX_HTTP_DATE, "{secs} is beyond the year 9999");
    let leap = |y: u64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mut days = secs / 86_400;
    let weekday = ((days + 3) % 7) as usize;
    let mut year = 1970;
    loop {
        let len = if leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        year += 1;
    }
    let lens = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 0;
    while days >= lens[month] {
        days -= lens[month];
        month += 1;
    }
    let rem = secs % 86_400;
    (
        year,
        month + 1,
        days + 1,
        rem / 3_600,
        rem / 60 % 60,
        rem % 60,
        weekday,
    )
}

fn imf(secs: u64) -> String {
    let (y, m, d, h, mi, s, wd) = civil(secs);
    format!(
        "{}, {d:02} {} {y:04} {h:02}:{mi:02}:{s:02} GMT",
        &DAYS[wd][..3],
        MONTHS[m - 1]
    )
}

fn rfc850(secs: u64) -> String {
    let (y, m, d, h, mi, s, wd) = civil(secs);
    format!(
        "{}, {d:02}-{}-{:02} {h:02}:{mi:02}:{s:02} GMT",
        DAYS[wd],
        MONTHS[m - 1],
        y % 100
    )
}

fn asctime(secs: u64) -> String {
    let (y, m, d, h, mi, s, wd) = civil(secs);
    format!(
        "{} {} {d:>2} {h:02}:{mi:02}:{s:02} {y:04}",
        &DAYS[wd][..3],
        MONTHS[m - 1]
    )
}

#[test]
fn status_mapping() {
    let cases = [
        (100, false, Outcome::Success),
        (101, false, Outcome::Success),
        (200, true, Outcome::Success),
        (204, false, Outcome::Success),
        (301, true, Outcome::Success),
        (399, false, Outcome::Success),
        (400, false, Outcome::Permanent),
        (404, true, Outcome::Permanent),
        (408, false, Outcome::Timeout),
        (429, false, Outcome::Throttled),
        (429, true, Outcome::Throttled),
        (499, false, Outcome::Permanent),
        (500, true, Outcome::OtherTransient),
        (502, false, Outcome::OtherTransient),
        (503, false, Outcome::OtherTransient),
        (503, true, Outcome::Throttled),
        (504, false, Outcome::OtherTransient),
        (599, false, Outcome::OtherTransient),
        (0, false, Outcome::OtherTransient),
        (99, false, Outcome::OtherTransient),
        (600, true, Outcome::OtherTransient),
        (u16::MAX, false, Outcome::OtherTransient),
    ];
    for (status, has, want) in cases {
        assert_eq!(outcome_of_status(status, has), want, "{status} {has}");
    }
}

#[test]
fn classify_keeps_retry_after_only_when_throttled() {
    let c = |s, h: Option<&str>| classify(s, h.map(str::as_bytes), NOW);
    assert_eq!(c(429, Some("7")).retry_after, Some(Nanos::from_secs(7)));
    assert_eq!(c(429, Some("soon")).retry_after, None);
    assert_eq!(c(429, Some("soon")).outcome, Outcome::Throttled);
    assert_eq!(c(503, Some("7")).outcome, Outcome::Throttled);
    assert_eq!(c(503, Some("-7")).outcome, Outcome::OtherTransient);
    assert_eq!(c(503, None).outcome, Outcome::OtherTransient);
    assert_eq!(c(301, Some("7")).retry_after, None);
    assert_eq!(c(200, Some("7")).outcome, Outcome::Success);
}

#[test]
fn retry_after_garbage_and_absurd_values() {
    let p = |v: &str| parse_retry_after(v.as_bytes(), NOW);
    for garbage in [
        "",
        " ",
        "\t",
        "²",
        "٣",
        "-5",
        "+5",
        "1.5",
        "1e3",
        "5s",
        "0x10",
        "1 2",
        "12a",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37",
        "tomorrow",
        "Sun, 31 Feb 1994 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994",
        "Sun Nov  6 08:49:37 94",
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun, 06-Nov-94 08:49:37 GMT",
    ] {
        assert_eq!(p(garbage), None, "{garbage:?}");
    }
    assert_eq!(parse_retry_after(&[0xFF, b'1'], NOW), None);
    assert_eq!(p("0"), Some(Nanos::ZERO));
    assert_eq!(p("007"), Some(Nanos::from_secs(7)));
    assert_eq!(p(" \t120 "), Some(Nanos::from_secs(120)));
    assert_eq!(p("18446744073"), Some(Nanos::from_secs(18_446_744_073)));
    assert_eq!(p("18446744074"), Some(Nanos::MAX)); // beyond u64 nanoseconds
    assert_eq!(p("18446744073709551616"), Some(Nanos::MAX)); // beyond u64 seconds
    assert_eq!(p(&"9".repeat(5_000)), Some(Nanos::MAX));
    assert_eq!(p("Fri, 31 Dec 9999 23:59:59 GMT"), Some(Nanos::MAX));
    assert_eq!(p("Thu, 01 Jan 1970 00:00:00 GMT"), Some(Nanos::ZERO)); // past
    assert_eq!(p("Sat, 01 Jan 0000 00:00:00 GMT"), Some(Nanos::ZERO));
    assert_eq!(
        p("Sun, 06 Nov 1994 08:49:38 GMT"),
        Some(Nanos::from_secs(1))
    );
    assert_eq!(p("Sun, 06 Nov 1994 08:49:37 GMT"), Some(Nanos::ZERO)); // now
                                                                       // A leap second reads as the next second.
    assert_eq!(
        p("Sun, 06 Nov 1994 08:49:60 GMT"),
        Some(Nanos::from_secs(23))
    );
    // The day name is a day name, not checked against the date.
    assert_eq!(
        p("Mon, 06 Nov 1994 08:49:47 GMT"),
        Some(Nanos::from_secs(10))
    );
}

#[test]
fn rfc850_two_digit_years_are_read_in_the_century_of_now() {
    // In 1994, "94" is 1994 and "44" is 1944.
    assert_eq!(
        parse_http_date(b"Sunday, 06-Nov-94 08:49:37 GMT", NOW),
        Some(NOW as i64)
    );
    let in_1944 = parse_http_date(b"Monday, 06-Nov-44 08:49:37 GMT", NOW).unwrap();
    assert!(in_1944 < 0);
    // In 2024, "74" is 2074 (50 years ahead is not "more than 50") and "75" is 1975.
    let jan_2024 = 1_704_067_200;
    let in_2074 = parse_http_date(b"Monday, 01-Jan-74 00:00:00 GMT", jan_2024).unwrap();
    assert_eq!(civil(in_2074 as u64).0, 2074);
    let in_1975 = parse_http_date(b"Wednesday, 01-Jan-75 00:00:00 GMT", jan_2024).unwrap();
    assert_eq!(civil(in_1975 as u64).0, 1975);
}

#[test]
fn the_example_dates_of_rfc_9110() {
    for v in [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ] {
        assert_eq!(parse_http_date(v.as_bytes(), NOW), Some(NOW as i64), "{v}");
    }
    assert_eq!(
        format_http_date(NOW).unwrap().as_str(),
        "Sun, 06 Nov 1994 08:49:37 GMT"
    );
    assert_eq!(
        format_http_date(0).unwrap().as_str(),
        "Thu, 01 Jan 1970 00:00:00 GMT"
    );
    assert_eq!(
        format_http_date(MAX_HTTP_DATE).unwrap().as_str(),
        "Fri, 31 Dec 9999 23:59:59 GMT"
    );
    assert_eq!(format_http_date(MAX_HTTP_DATE + 1), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), now in any::<u64>()) {
        let _ = parse_retry_after(&bytes, now);
        let _ = parse_http_date(&bytes, now);
        let _ = classify(200, Some(&bytes), now);
    }

    #[test]
    fn never_panics_on_near_dates(
        base in prop_oneof![Just(imf(NOW)), Just(rfc850(NOW)), Just(asctime(NOW))],
        at in 0usize..32, byte in any::<u8>(), now in any::<u64>(),
    ) {
        let mut v = base.into_bytes();
        if let Some(b) = v.get_mut(at) { *b = byte; }
        let _ = parse_retry_after(&v, now);
    }

    #[test]
    fn formatted_dates_round_trip(secs in 0u64..=MAX_HTTP_DATE) {
        let formatted = format_http_date(secs).unwrap();
        prop_assert_eq!(formatted.as_str(), imf(secs));
        prop_assert_eq!(parse_http_date(imf(secs).as_bytes(), 0), Some(secs as i64));
        prop_assert_eq!(parse_http_date(asctime(secs).as_bytes(), 0), Some(secs as i64));
        // The RFC 850 form only says the year modulo 100: read it in the year it was
        // written (its two-digit year then names that very year).
        prop_assert_eq!(parse_http_date(rfc850(secs).as_bytes(), secs), Some(secs as i64));
    }

    #[test]
    fn a_date_becomes_the_delay_to_it(now in 0u64..4_000_000_000, ahead in 0u64..4_000_000_000) {
        let at = now + ahead;
        prop_assert_eq!(parse_retry_after(imf(at).as_bytes(), now), Some(Nanos::from_secs(ahead)));
        prop_assert_eq!(parse_retry_after(imf(now).as_bytes(), at), Some(Nanos::ZERO));
    }

    #[test]
    fn delta_seconds_read_exactly_or_saturate(secs in any::<u64>(), zeros in 0usize..5) {
        let text = format!("{}{secs}", "0".repeat(zeros));
        let want = if secs > u64::MAX / 1_000_000_000 { Nanos::MAX } else { Nanos::from_secs(secs) };
        prop_assert_eq!(parse_retry_after(text.as_bytes(), NOW), Some(want));
    }
}
